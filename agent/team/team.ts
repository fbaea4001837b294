/**
 * An agent team: the agents of agents.yaml over one hub, store and human channel. Each agent runs the plain
 * AgentLoop with its own prompts (phases.ts), its narrow tools (narrow-host.ts), its budgets and models; what
 * makes it a team are the host functions its CODE gets:
 * - `agents.<name>({task, ...args})` runs a sub-agent's loop in a session of its own (linked by
 *   parent_session_id) and resolves to its typed report, never its trace (report.ts);
 * - `agents.list()`, `agents.send(name, message, {timeout_ms})` — the coordinator's tools;
 * - `agent.report({...})` in a sub-agent, `agent.handoff({to, reason})` in the agent holding the conversation.
 * Sub-agents a step started are cancelled and waited for when the step ends, so every call is in the log.
 */
import { runCode, type Namespaces } from "../../action/index.js";
import {
  ConfigError,
  ToolError,
  clip,
  derivedId,
  systemClock,
  totalSpend,
  type AgentCallRecord,
  type AgentReport,
  type AgentSession,
  type Step,
  type ToolInfo,
  type ModelProvider,
} from "../../core/index.js";
import {
  agentOf,
  agentProfile,
  toolAllowed,
  type Agent,
  type AgentsConfig,
  type ModelRole,
} from "./config.js";
import type { LoopEvent } from "../kernel/index.js";
import { TeamLoop, type Handoff, type HandoffTeam } from "./handoff.js";
import { pendingQuestion, type LoopHooks, type StepControl } from "../kernel/index.js";
import type { Question, StopAnswer } from "../../hil/index.js";
import { AgentLoop, type LoopDeps, type MemoryService } from "../kernel/index.js";
import { prefixRoles } from "./models.js";
import { narrowExecute, narrowHost, narrowServices } from "./narrow-host.js";
import { decisionPhase } from "../../decision/index.js";
import { perceptionPhase } from "../../perception/index.js";
import { agentSections } from "./phases.js";
import { plannerCoderPhase } from "./planner-coder.js";
import { checkReport, outcomeOf, reportOf, type AgentResult } from "./report.js";
import { SpendLedger } from "../kernel/index.js";

/** A sub-agent's session as it starts: its id and its caller's. */
export interface SubagentStart {
  session_id: string;
  parent_session_id: string;
}

export interface TeamOptions {
  config: AgentsConfig;
  /**
   * A provider an agent's config names for a role (agents.yaml `models`); undefined → the caller's models.
   * `start` is given for a sub-agent's session, so a model may be picked per session (replay does).
   */
  modelFor?: (agent: Agent, role: ModelRole, start?: SubagentStart) => ModelProvider | undefined;
  /** How long the end of a CODE step waits for the sub-agents it cancelled to finish their logs (ms). */
  settleMs?: number;
  /** Memory with another number of hits, for agents that set memory_hits; without it they use the caller's. */
  memory?: (hits: number) => MemoryService;
}

/** What `agents.list()` says about one agent. */
export interface AgentStatus {
  name: string;
  description: string;
  error_codes: string[];
  status: "idle" | "running" | "succeeded" | "failed";
  running: number;
  calls: number;
  last: { success: boolean; error_code: string; reason: string; session_id: string; at: string } | null;
}

/** One CODE step of a caller: what it may cancel and must wait for when it ends. */
interface StepWork {
  ctl: AbortController;
  runs: Set<Promise<AgentResult>>;
  /** Sub-agent calls this run of the step has made: each one's number gives its session's id. */
  calls: number;
  control: StepControl;
}

interface CallContext {
  caller: Agent;
  session: AgentSession;
  step: Step;
  base: LoopDeps;
  signal: AbortSignal;
  work: StepWork;
}

interface Running {
  session_id: string;
  result: Promise<AgentResult>;
  cancel(reason: string, timedOut: boolean): void;
}

const invalid = (fn: string, message: string) => new ToolError("TOOL_INVALID_ARGS", fn, message);

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

export class AgentTeam implements HandoffTeam {
  readonly config: AgentsConfig;
  /** Handoffs asked for by a session's CODE, taken by its TeamLoop when the agent's turn ends. */
  readonly handoffs = new Map<string, Handoff>();
  /** What the team's sessions spend while they run, so sub-agents spend their callers' budgets too. */
  readonly ledger = new SpendLedger();
  private readonly counters = new Map<
    string,
    Omit<AgentStatus, "name" | "description" | "error_codes" | "status">
  >();
  /** Sub-agent sessions running in this process, by id: a step run again here waits on its own. */
  private readonly running = new Map<string, Running>();

  constructor(private readonly options: TeamOptions) {
    this.config = options.config;
  }

  agent(name: string, where?: string): Agent {
    return agentOf(this.config, name, where);
  }

  /** The loop for agent `name` holding the conversation over `base` (handoffs are followed). */
  loop(name: string, base: LoopDeps): TeamLoop {
    return new TeamLoop(this, this.agent(name), base);
  }

  /** The agents a session of `root` may reach: itself, its sub-agents and handoff targets, transitively. */
  reachable(root: string): Agent[] {
    const seen = new Map<string, Agent>();
    const visit = (n: string) => {
      if (seen.has(n)) return;
      const a = this.agent(n);
      seen.set(n, a);
      for (const m of [...a.subagents, ...a.handoffs]) visit(m);
    };
    visit(root);
    return [...seen.values()];
  }

  /** ConfigError when a tool pattern of an agent `root` may reach matches no tool of the hub (typo, server off). */
  checkTools(root: string, tools: readonly ToolInfo[]): void {
    for (const a of this.reachable(root)) {
      for (const p of a.tools) {
        if (!tools.some((t) => toolAllowed([p], t))) {
          const servers = [...new Set(tools.map((t) => t.server))].join(", ");
          throw new ConfigError(
            `${this.config.file}: agent "${a.name}": tool pattern "${p}" matches no connected tool (servers: ${servers || "none"})`,
          );
        }
      }
    }
  }

  /** The deps of one agent's loop over `base` (the deps a plain session would get); `start` for a sub-agent's. */
  deps(agent: Agent, base: LoopDeps, start?: SubagentStart, signal = base.signal): LoopDeps {
    const model = (role: ModelRole) => this.model(agent, role, base, start);
    const onEvent = base.onEvent;
    return {
      ...base,
      models: { perception: model("perception"), decision: model("decision") },
      host: narrowHost(base.host, agent.name, agent.tools),
      services: narrowServices(base.services, base.host, agent.name, agent.tools),
      execute: narrowExecute(base.execute ?? runCode, () => base.host.tools()),
      profile: agentProfile(agent, base.profile),
      // The caller's memory with the agent's number of hits keeps the caller's scope (a batch run's start).
      memory:
        agent.memory_hits === undefined
          ? base.memory
          : (base.memory?.withHits?.(agent.memory_hits) ??
            this.options.memory?.(agent.memory_hits) ??
            base.memory),
      hooks: this.hooks(agent, base, start, signal),
      signal,
      ledger: base.ledger ?? this.ledger,
      // The end of a turn that hands over is not the end of the session: its session_end waits for the last.
      onEvent:
        onEvent &&
        ((e: LoopEvent) => {
          if (e.type === "session_end" && this.handoffs.has(e.session.session_id)) return;
          onEvent(e);
        }),
    };
  }

  /** `agents.list()`: each agent `caller` may call, with its last status. */
  list(caller: Agent): AgentStatus[] {
    return caller.subagents.map((n) => {
      const a = this.agent(n);
      const c = this.counter(n);
      const status = c.running ? "running" : c.last ? (c.last.success ? "succeeded" : "failed") : "idle";
      return { name: n, description: a.description, error_codes: a.codes, status, ...c };
    });
  }

  private counter(name: string) {
    let c = this.counters.get(name);
    if (!c) this.counters.set(name, (c = { running: 0, calls: 0, last: null }));
    return c;
  }

  private model(agent: Agent, role: ModelRole, base: LoopDeps, start?: SubagentStart): ModelProvider {
    const own = this.options.modelFor?.(agent, role, start);
    const m = own ?? (role === "perception" ? base.models.perception : base.models.decision);
    return start ? prefixRoles(m, agent.name) : m;
  }

  private hooks(agent: Agent, base: LoopDeps, start?: SubagentStart, signal?: AbortSignal): LoopHooks {
    const sub = start !== undefined;
    const sections = agentSections(agent, this.config.agents, sub);
    const work = new Map<string, StepWork>();
    const reports = new Map<string, AgentReport>();
    const key = (s: AgentSession, step: Step) => `${s.session_id}:${step.index}`;
    return {
      perception: perceptionPhase(sections.perception),
      decision:
        agent.decision === "planner_coder"
          ? plannerCoderPhase(
              {
                planner: this.model(agent, "planner", base, start),
                coder: this.model(agent, "coder", base, start),
              },
              sections.decision,
            )
          : decisionPhase(sections.decision),
      namespaces: (s, step, control) => {
        const w: StepWork = { ctl: new AbortController(), runs: new Set(), calls: 0, control };
        work.set(key(s, step), w);
        const ctx: CallContext = {
          caller: agent,
          session: s,
          step,
          base,
          signal: signal ? AbortSignal.any([signal, w.ctl.signal]) : w.ctl.signal,
          work: w,
        };
        const ns: Namespaces = {};
        if (agent.subagents.length) ns.agents = this.coordinator(ctx);
        const self: Namespaces[string] = {};
        if (sub) self.report = async (args) => this.fileReport(agent, s, reports, args);
        if (!sub && agent.handoffs.length) self.handoff = async (args) => this.askHandoff(agent, s, args);
        if (Object.keys(self).length) ns.agent = self;
        return ns;
      },
      afterHalt: async (s, step, pause) => {
        const w = work.get(key(s, step));
        work.delete(key(s, step));
        if (!w) return;
        // A paused step runs again on resume and replays its sub-agents' outcomes: let them reach one.
        if (pause) await Promise.allSettled([...w.runs]);
        else {
          w.ctl.abort(new Error("the step that called it was stopped"));
          await settle(w.runs, this.options.settleMs ?? 10_000);
        }
      },
      afterCode: async (s, step) => {
        const w = work.get(key(s, step));
        work.delete(key(s, step));
        if (w) {
          w.ctl.abort(new Error("the step that called it ended"));
          await settle(w.runs, this.options.settleMs ?? 10_000);
        }
        const report = reports.get(s.session_id);
        if (report) {
          reports.delete(s.session_id);
          s.report = report;
          return {
            status: report.success ? "succeeded" : "failed",
            answer: JSON.stringify(report),
            reason: report.success ? undefined : `${report.error_code}: ${report.reason}`,
          };
        }
        const h = this.handoffs.get(s.session_id);
        if (h) return { status: "running", answer: null, reason: `handing over to ${h.to}: ${h.reason}` };
        return undefined;
      },
    };
  }

  private fileReport(agent: Agent, s: AgentSession, reports: Map<string, AgentReport>, args: unknown[]) {
    if (reports.has(s.session_id))
      throw new ToolError("REPORT_ALREADY_FILED", "agent.report", "the report was already filed");
    const checked = checkReport(agent, args.length === 1 ? args[0] : args);
    if (!checked.ok) {
      throw new ToolError(
        "REPORT_INVALID",
        "agent.report",
        `the report does not fit agent "${agent.name}"'s contract: ${checked.message}`,
      );
    }
    reports.set(s.session_id, checked.report);
    return { filed: true, note: "the session ends after this step" };
  }

  private askHandoff(agent: Agent, s: AgentSession, args: unknown[]) {
    const v = args[0];
    const usage = 'agent.handoff takes {to: "agent name", reason: "why they should take over"}';
    if (!isObject(v) || typeof v.to !== "string" || typeof v.reason !== "string" || !v.reason.trim())
      throw invalid("agent.handoff", usage);
    if (!agent.handoffs.includes(v.to)) {
      throw new ToolError(
        "AGENT_NOT_FOUND",
        "agent.handoff",
        `"${v.to}" is not an agent ${agent.name} may hand over to (it may: ${agent.handoffs.join(", ")})`,
      );
    }
    if (this.handoffs.has(s.session_id))
      throw new ToolError(
        "HANDOFF_ALREADY",
        "agent.handoff",
        "this step already handed the conversation over",
      );
    this.handoffs.set(s.session_id, { from: agent.name, to: v.to, reason: v.reason.trim() });
    return { handed_over: true, to: v.to, note: `${v.to} takes over after this step` };
  }

  private coordinator(ctx: CallContext): Namespaces[string] {
    const fns: Namespaces[string] = {
      list: async () => this.list(ctx.caller),
      send: (args) => this.send(ctx, args),
    };
    for (const name of ctx.caller.subagents) {
      fns[name] = async (args) => {
        const v = args[0];
        const usage = `agents.${name} takes {task: "what to do", ...arguments}`;
        const task = typeof v === "string" ? { task: v } : v;
        if (!isObject(task) || typeof task.task !== "string" || !task.task.trim() || args.length > 1)
          throw invalid(`agents.${name}`, usage);
        const { task: text, ...rest } = task;
        return this.start(ctx, this.agent(name), text, rest, "call").result;
      };
    }
    return fns;
  }

  /** `agents.send(name, message, {timeout_ms})`: a call with a time limit; AGENT_TIMEOUT when it runs out. */
  private async send(ctx: CallContext, args: unknown[]): Promise<AgentResult> {
    const usage = "agents.send takes (name, message, {timeout_ms}) or ({name, message, timeout_ms})";
    const [first, second, third] = args;
    const o = isObject(first) ? first : { name: first, message: second, ...(isObject(third) ? third : {}) };
    const name = o.name ?? o.to;
    if (typeof name !== "string" || typeof o.message !== "string" || !o.message.trim())
      throw invalid("agents.send", usage);
    if (!ctx.caller.subagents.includes(name)) {
      throw new ToolError(
        "AGENT_NOT_FOUND",
        "agents.send",
        `no agent "${name}" to send to (agents: ${ctx.caller.subagents.join(", ")})`,
      );
    }
    const agent = this.agent(name);
    const ms = o.timeout_ms ?? agentProfile(agent, ctx.base.profile).budgets.max_wall_ms;
    if (typeof ms !== "number" || !(ms > 0) || !Number.isFinite(ms))
      throw invalid(
        "agents.send",
        `timeout_ms must be a positive number of milliseconds, got ${JSON.stringify(ms)}`,
      );
    const run = this.start(ctx, agent, o.message, {}, "send");
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const why = timeoutReason(name, ms, run.session_id);
        run.cancel(why, true);
        reject(new ToolError("AGENT_TIMEOUT", "agents.send", why));
      }, ms);
    });
    try {
      return await Promise.race([run.result, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Start a sub-agent's session; its result is the report, recorded on the caller's session when it ends. The
   * session's id comes from the caller's step and the call's order in it, so when the step runs again (resumed
   * after a pause or a crash) the same call finds the session its earlier run started: a finished one's outcome
   * is handed back, one its dead process left running is resumed, and neither starts over.
   */
  private start(
    ctx: CallContext,
    agent: Agent,
    task: string,
    args: Record<string, unknown>,
    via: AgentCallRecord["via"],
  ): Running {
    const sessionId = derivedId("subagent", ctx.session.session_id, ctx.step.index, ctx.work.calls++);
    const query = Object.keys(args).length
      ? `${task}\n\nArguments from the caller (JSON): ${JSON.stringify(args)}`
      : task;
    const own = this.running.get(sessionId);
    if (own) return own;
    const earlier = ctx.base.journal?.earlierSession?.(sessionId);
    if (!earlier)
      return this.launch(ctx, agent, sessionId, via, task, (loop, parent) =>
        loop.run(query, { sessionId, parentSessionId: parent, agent: agent.name }),
      );
    const fn = via === "send" ? "agents.send" : `agents.${agent.name}`;
    const was = earlier.session;
    if (was.agent !== agent.name || was.original_query !== query) {
      const e = new ToolError(
        "REPLAY_MISMATCH",
        fn,
        `replaying step ${ctx.step.index}: sub-agent call ${sessionId} was ${was.agent ?? "an agent"} with ${JSON.stringify(clip(was.original_query, 200))} before the restart, but now the code calls ${agent.name} with ${JSON.stringify(clip(query, 200))}; the step took another path`,
      );
      ctx.work.control.diverged(e);
      return settled(sessionId, Promise.reject(e));
    }
    if (earlier.busy) {
      const e = new ToolError(
        "TOOL_ERROR",
        fn,
        `the sub-agent session ${sessionId} this call started before is running in another process; wait for it, then resume this session again`,
      );
      return settled(sessionId, Promise.reject(e));
    }
    // Left running by a dead process, or paused on a question (which its resume asks again).
    if (earlier.interrupted || was.status === "awaiting_human")
      return this.launch(ctx, agent, sessionId, via, task, (loop) => loop.resume(was));
    return settled(sessionId, this.replayed(ctx, agent, was, via));
  }

  /** A finished sub-agent session's outcome, handed back again to the step that called it (replayed). */
  private async replayed(
    ctx: CallContext,
    agent: Agent,
    s: AgentSession,
    via: AgentCallRecord["via"],
  ): Promise<AgentResult> {
    const r = outcomeOf(agent, s.session_id, s);
    const timedOut = via === "send" && s.status === "aborted" && isTimeoutReason(s.status_reason);
    const calls = (ctx.session.agent_calls ??= []);
    // Its caller's log holds the call unless the caller's process died before it saved it.
    if (!calls.some((c) => c.session_id === s.session_id)) {
      calls.push({
        ...callRecord(agent, s.session_id, via, ctx.step.index, r, s.created_at, s.usage.ms, totalSpend(s)),
        ...(timedOut ? { timed_out: true } : {}),
        replayed: true,
      });
    }
    ctx.base.onEvent?.({
      type: "agent_end",
      agent: agent.name,
      session_id: s.session_id,
      parent_session_id: ctx.session.session_id,
      report: reportOf(r),
      tool_calls_used: r.tool_calls_used,
      replayed: true,
    });
    if (timedOut)
      throw new ToolError("AGENT_TIMEOUT", "agents.send", s.status_reason!.replace(/^cancelled: /, ""));
    return r;
  }

  /** Runs a sub-agent's loop (`go`: a new session, or resuming one) under the caller's step. */
  private launch(
    ctx: CallContext,
    agent: Agent,
    sessionId: string,
    via: AgentCallRecord["via"],
    task: string,
    go: (loop: AgentLoop, parentSessionId: string) => Promise<AgentSession>,
  ): Running {
    const { base } = ctx;
    const clock = base.clock ?? systemClock;
    const ac = new AbortController();
    const signal = AbortSignal.any([ac.signal, ctx.signal]);
    const emit = (e: LoopEvent) => base.onEvent?.(e);
    const deps = this.deps(
      agent,
      { ...base, onEvent: undefined },
      { session_id: sessionId, parent_session_id: ctx.session.session_id },
      signal,
    );
    deps.onEvent = (event) => emit({ type: "agent_event", agent: agent.name, session_id: sessionId, event });
    const counter = this.counter(agent.name);
    counter.running += 1;
    counter.calls += 1;
    const startedAt = clock.iso();
    const t0 = clock.now();
    let timedOut = false;
    emit({
      type: "agent_start",
      agent: agent.name,
      session_id: sessionId,
      parent_session_id: ctx.session.session_id,
      task,
    });
    const result = go(new AgentLoop(deps), ctx.session.session_id)
      .then(
        (s) => ({ s, r: outcomeOf(agent, sessionId, s), spent: totalSpend(s) }),
        (e: unknown) => ({
          s: undefined,
          r: outcomeOf(agent, sessionId, undefined, e),
          // No session came back, but its account (under the caller's) knows what it spent.
          spent: deps.ledger!.spentUnder(ctx.session.session_id, sessionId),
        }),
      )
      .then(({ s, r, spent }) => {
        counter.running -= 1;
        counter.last = {
          success: r.success,
          error_code: r.error_code,
          reason: r.reason,
          session_id: sessionId,
          at: clock.iso(),
        };
        const question = s?.status === "awaiting_human" ? pendingQuestion(s) : undefined;
        if (s && question) {
          // It paused on a question: its caller's step pauses on it too, and the call is not over (its
          // report, and its record here, come when a resume of the caller resumes it).
          ctx.work.control.paused(question, deferral(s, question, clock.iso()), {
            agent: agent.name,
            session_id: sessionId,
          });
          throw new ToolError(
            "TOOL_CANCELLED",
            via === "send" ? "agents.send" : `agents.${agent.name}`,
            `agent "${agent.name}" waits on a person (${s.pending_question ?? question.kind}); the step pauses with it`,
          );
        }
        const record = callRecord(
          agent,
          sessionId,
          via,
          ctx.step.index,
          r,
          startedAt,
          Math.max(0, clock.now() - t0),
          spent,
        );
        (ctx.session.agent_calls ??= []).push(timedOut ? { ...record, timed_out: true } : record);
        emit({
          type: "agent_end",
          agent: agent.name,
          session_id: sessionId,
          parent_session_id: ctx.session.session_id,
          report: reportOf(r),
          tool_calls_used: r.tool_calls_used,
        });
        return r;
      });
    ctx.work.runs.add(result);
    const run: Running = {
      session_id: sessionId,
      result,
      cancel(reason, t) {
        timedOut ||= t;
        ac.abort(new Error(reason));
      },
    };
    this.running.set(sessionId, run);
    // On either outcome (a paused sub-agent's call rejects), with no rejection of its own left unhandled.
    const done = () => {
      ctx.work.runs.delete(result);
      this.running.delete(sessionId);
    };
    result.then(done, done);
    return run;
  }
}

/** The defer a paused sub-agent's question got, as its session logged it, for its caller's step to pause on. */
function deferral(s: AgentSession, question: Question, at: string): StopAnswer {
  const last = s.state.human_inputs.at(-1);
  return {
    kind: "stop",
    question_kind: question.kind,
    outcome: "defer",
    reason: s.status_reason ?? "paused until a person answers",
    answered_by: last?.answered_by ?? "policy:defer",
    at: last?.at ?? at,
  };
}

/** A call's outcome that is already known (replayed, or refused): nothing to cancel. */
function settled(sessionId: string, result: Promise<AgentResult>): Running {
  // A rejection is the code's to catch; this copy only keeps it from counting as unhandled.
  result.catch(() => undefined);
  return { session_id: sessionId, result, cancel: () => undefined };
}

function callRecord(
  agent: Agent,
  sessionId: string,
  via: AgentCallRecord["via"],
  stepIndex: number,
  r: AgentResult,
  startedAt: string,
  durationMs: number,
  spent: ReturnType<typeof totalSpend>,
): AgentCallRecord {
  return {
    agent: agent.name,
    session_id: sessionId,
    via,
    step_index: stepIndex,
    success: r.success,
    error_code: r.error_code,
    reason: r.reason,
    tool_calls_used: r.tool_calls_used,
    started_at: startedAt,
    duration_ms: durationMs,
    ...spent,
  };
}

/** Why `agents.send` cancelled a sub-agent that did not report in time; the session keeps it as its reason. */
function timeoutReason(name: string, ms: number, sessionId: string): string {
  return `agent "${name}" did not report within ${ms} ms; it was cancelled (session ${sessionId})`;
}

function isTimeoutReason(reason: string | undefined): boolean {
  return /^cancelled: agent "[^"]+" did not report within \d+ ms; it was cancelled/.test(reason ?? "");
}

/** Wait for the runs to end, at most `ms` (a run that ignores cancellation must not hang its caller). */
async function settle(runs: Set<Promise<unknown>>, ms: number): Promise<void> {
  if (runs.size === 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled([...runs]),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]);
  clearTimeout(timer);
}
