/**
 * The Perception–Decision–Action loop (DESIGN.md "The loop"): perceive the query, decide a plan, run its
 * steps, perceive each result, and go on, replan or stop. Each phase lives in its own module; this file only
 * sequences them, keeps the session up to date and writes it to the recorder as it happens.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { runCode, type Namespaces } from "../action/index.js";
import type { Profile } from "../config/index.js";
import {
  BudgetExceeded,
  ConfigError,
  ModelError,
  errorMessage,
  newId,
  systemClock,
  type AgentSession,
  type Clock,
  type DecisionOutput,
  type PerceptionSnapshot,
  type PlanReason,
  type SessionRecorder,
  type SessionStatus,
  type SnapshotType,
  type Step,
  type ToolHost,
} from "../core/index.js";
import type { DecisionInput } from "../decision/index.js";
import type { GenerateResult, ModelProvider } from "../llm/types.js";
import type { PerceptionInput } from "../perception/index.js";
import type { LoopEvent } from "./events.js";
import { STOP_STATUS, questionText, type HumanChannel, type Question } from "../hil/index.js";
import {
  findToolCalls,
  findingsToStepError,
  formatFindings,
  guardCode,
  guardQuery,
  guardResult,
  toolRankerFor,
  type Finding,
} from "../heuristics/index.js";
import { defaultDecision, defaultPerception, type LoopHooks, type Phase } from "./hooks.js";
import { approvalGate, ask, pendingQuestion, WaitClock, type HumanDeps } from "./human.js";
import { scopedHost } from "./scoped-host.js";
import { currentPlan, newSession } from "./session.js";
import { trackModelCall } from "./model-call.js";
import { SpendLedger, type SpendAccount } from "./spend.js";
import { newStep, nextPlanVersion, partialAnswer, stepDecision, type StepDecision } from "./plan.js";

/** What the loop asks of memory: rendered text for the prompts ("" when there is nothing). */
export interface MemoryService {
  recall(query: string): string;
  toolStats(): string;
  /** Per-tool call counts, for ranking tools by reliability. */
  toolStatRows?(): ReadonlyArray<{ server: string; tool: string; calls: number; ok: number }>;
}

export interface LoopDeps {
  models: { perception: ModelProvider; decision: ModelProvider };
  host: ToolHost;
  recorder: SessionRecorder;
  profile: Profile;
  memory?: MemoryService;
  clock?: Clock;
  newId?: () => string;
  /** The sandbox; injectable so benchmarks can measure the loop alone. */
  execute?: typeof runCode;
  /** Who answers questions (hil/). Without one, a NOP pauses the session and failures use budgets only. */
  human?: HumanChannel;
  /** Ctrl-C presses to turn into a question (with `human`): go on, pause or abort. */
  interrupts?: InterruptSource;
  onEvent?: (event: LoopEvent) => void;
  signal?: AbortSignal;
  /** Whether a local path exists, for the query guard (default: the file system). */
  exists?: (path: string) => boolean;
  /** An agent team's phases, CODE namespaces and stops (agent/hooks.ts); absent for a plain session. */
  hooks?: LoopHooks;
  /** Host functions every CODE step gets beside the tools, e.g. `memory.search`, `resources.read`. */
  services?: Namespaces;
  /** Spending of the sessions being driven; a team's loops share one, so sub-agents spend their callers' budgets. */
  ledger?: SpendLedger;
}

export interface RunOptions {
  sessionId?: string;
  parentSessionId?: string;
  agent?: string;
}

/** What the loop does next: it runs `while (next.kind !== "end")` over these. */
type Next =
  /** `retried`: the model's last reply for this move could not be used, and the move is being made again. */
  | { kind: "start"; retried?: boolean }
  | {
      kind: "decide";
      mode: "initial" | "mid_session";
      snapshot: PerceptionSnapshot;
      guidance?: string;
      reason: PlanReason;
      trigger: string;
      retried?: boolean;
    }
  | { kind: "step"; decision: DecisionOutput }
  | { kind: "run_code"; step: Step }
  | { kind: "judge"; step: Step; retried?: boolean }
  /** `step` is the step the question is about; absent for questions about no step (interrupts, unusable output). */
  | { kind: "ask"; question: Question; step?: Step }
  | { kind: "end" };

/** The state of one drive of a session (a run, or a resume). */
interface Run {
  s: AgentSession;
  stepIndex: number | undefined;
  memory: string;
  host: ToolHost;
  /** The query as the prompts see it: the original with blocklisted terms taken out (and said so). */
  query: string;
  queryFindings: string;
  /** Tool reliability for the decision prompt and the ranking, read from memory once per drive. */
  toolStats: string;
  toolStatRows?: ReturnType<NonNullable<MemoryService["toolStatRows"]>>;
  /** The signal for the move in flight: the session's, plus Ctrl-C interrupts of this one move. */
  signal?: AbortSignal;
  /** The human channel for this run, with its own count of time spent waiting on the person. */
  human?: HumanDeps;
  /** What the session (with its sub-agents) spent, against its budgets and its callers'. */
  account: SpendAccount;
}

/** Where Ctrl-C presses come from, when a person can be asked what to do about them (the CLI's terminal). */
export interface InterruptSource {
  subscribe(listener: () => void): () => void;
}

/** Moves that wait on a model or run code: Ctrl-C cancels them and asks (the others are instant). */
const INTERRUPTIBLE = new Set<Next["kind"]>(["start", "decide", "run_code", "judge"]);

export class AgentLoop {
  private readonly clock: Clock;
  private readonly ledger: SpendLedger;
  private readonly execute: typeof runCode;
  private readonly human?: HumanDeps;

  constructor(private readonly deps: LoopDeps) {
    this.clock = deps.clock ?? systemClock;
    this.ledger = deps.ledger ?? new SpendLedger();
    this.execute = deps.execute ?? runCode;
    if (deps.human) {
      this.human = { channel: deps.human, recorder: deps.recorder, clock: this.clock, signal: deps.signal };
    }
  }

  /** Runs one session to an end state and returns it. Throws only when a model cannot be reached at all. */
  async run(query: string, options: RunOptions = {}): Promise<AgentSession> {
    const s = newSession(query, options.sessionId ?? (this.deps.newId ?? newId)(), this.clock.iso(), {
      parent_session_id: options.parentSessionId,
      agent: options.agent,
    });
    this.deps.recorder.startSession(s);
    this.emit({ type: "session_start", session_id: s.session_id, query });
    return this.drive(s, { kind: "start" });
  }

  /**
   * Continues a session another agent handed over (agent/handoff.ts): this agent decides the next step with
   * everything so far in view and `guidance` (who handed over and why) as feedback.
   */
  async takeOver(session: AgentSession, guidance: string): Promise<AgentSession> {
    const snapshot = session.snapshots.at(-1)?.snapshot;
    if (!snapshot) throw new ConfigError(`session ${session.session_id} has nothing to hand over yet`);
    const s: AgentSession = { ...session, status: "running", status_reason: undefined };
    const trigger = `handoff:step:${s.steps.length}`;
    return this.drive(s, {
      kind: "decide",
      mode: "mid_session",
      snapshot,
      guidance,
      reason: "next_step",
      trigger,
    });
  }

  /** Continues a session paused on a human (status awaiting_human): asks the pending question again. */
  async resume(session: AgentSession): Promise<AgentSession> {
    const question = pendingQuestion(session);
    // The step the question is about, if any (an interrupt or an unusable-output question has none to finish).
    const index =
      question && question.kind !== "interrupt" && "step_index" in question ? question.step_index : undefined;
    const step = index === undefined ? undefined : session.steps[index];
    if (session.status !== "awaiting_human" || !question) {
      throw new ConfigError(`session ${session.session_id} is ${session.status}, not waiting on a question`);
    }
    const s: AgentSession = { ...session, status: "running", status_reason: undefined };
    delete s.pending_human;
    delete s.pending_question;
    this.emit({ type: "session_start", session_id: s.session_id, query: s.original_query });
    return this.drive(s, { kind: "ask", question, step });
  }

  private async drive(s: AgentSession, first: Next): Promise<AgentSession> {
    const started = this.clock.now();
    const msBefore = s.usage.ms;
    const run: Run = {
      s,
      stepIndex: undefined,
      memory: "",
      host: this.deps.host,
      query: s.original_query,
      queryFindings: "",
      toolStats: "",
      signal: this.deps.signal,
      // Time spent waiting on a person does not count against the wall-time budget.
      account: this.ledger.open(
        s,
        this.deps.profile.budgets,
        () => this.clock.now() - (run.human?.waited?.ms ?? 0) - started,
      ),
    };
    // The approval gate sits inside the per-session host, so denied calls are logged like any failed call.
    run.human = this.human ? { ...this.human, waited: new WaitClock(() => this.clock.now()) } : undefined;
    const gated = run.human
      ? approvalGate(this.deps.host, run.human, s, () => run.stepIndex)
      : this.deps.host;
    const scoped = scopedHost(gated, this.clock.now, this.clock.iso);
    run.host = scoped;
    const unsubscribe = scoped.onCall((record) => {
      s.usage.tool_calls += 1;
      this.deps.recorder.recordToolCall(s.session_id, run.stepIndex ?? null, record);
      this.emit({ type: "tool_call", record });
    });
    let fatal: unknown;
    try {
      const refused = this.prepare(run);
      let next = refused ? this.end(s, "failed", null, refused) : first;
      while (next.kind !== "end") next = await this.advance(run, next);
    } catch (e) {
      // Cancelled (Ctrl-C): whatever was in flight failed because of it, so the session was aborted.
      if (this.deps.signal?.aborted)
        this.end(s, "aborted", partialAnswer(s), `cancelled: ${errorMessage(this.deps.signal.reason ?? e)}`);
      else if (e instanceof BudgetExceeded) this.end(s, "budget_exhausted", partialAnswer(s), e.message);
      else {
        this.end(s, "failed", null, errorMessage(e));
        if (e instanceof ModelError && e.exitCode === 3) fatal = e;
      }
    } finally {
      unsubscribe();
      this.ledger.close(run.account);
      s.usage.ms = msBefore + (this.clock.now() - started);
      this.deps.recorder.finishSession(s);
      this.emit({ type: "session_end", session: s });
    }
    if (fatal) throw fatal;
    return s;
  }

  /**
   * What every drive of a session needs before its first move — a new run, a resume, a hand-over alike: the
   * query as the prompts may see it, memory hits and tool reliability. Returns why the query is refused, if it is.
   */
  private prepare(run: Run): string | undefined {
    if (this.deps.profile.guards.query) {
      const g = guardQuery(run.s.original_query, {
        exists: this.deps.exists ?? existsOnDisk,
        blocklist: this.deps.profile.blocklist,
      });
      if (g.blocking) return `the query was refused: ${formatFindings(g.findings)}`;
      run.query = g.sanitized;
      if (g.findings.length) run.queryFindings = `Checks on the request:\n${formatFindings(g.findings)}\n`;
    }
    run.memory = this.deps.memory?.recall(run.query) ?? "";
    run.toolStats = this.deps.memory?.toolStats() ?? "";
    run.toolStatRows = this.deps.memory?.toolStatRows?.();
    return undefined;
  }

  /**
   * One move, interruptible when a person can answer: Ctrl-C cancels the model call or code in flight and
   * asks whether to go on (the move is made again), pause (for pda resume) or abort.
   */
  private async advance(run: Run, next: Next): Promise<Next> {
    const interrupts = run.human ? this.deps.interrupts : undefined;
    if (!interrupts || !INTERRUPTIBLE.has(next.kind)) return this.move(run, next);
    const phase = new AbortController();
    run.signal = this.deps.signal ? AbortSignal.any([this.deps.signal, phase.signal]) : phase.signal;
    const off = interrupts.subscribe(() => phase.abort(new Error("interrupted (Ctrl-C)")));
    try {
      const after = await this.move(run, next);
      return phase.signal.aborted ? this.interrupted(run, next) : after;
    } catch (e) {
      if (phase.signal.aborted && !this.deps.signal?.aborted) return this.interrupted(run, next);
      throw e;
    } finally {
      off();
      run.signal = this.deps.signal;
    }
  }

  private async interrupted(run: Run, next: Next): Promise<Next> {
    const what =
      next.kind === "run_code"
        ? `step ${next.step.plan_step ?? next.step.index}'s code`
        : next.kind === "decide"
          ? "the decision model call"
          : "the perception model call";
    const question: Question = { kind: "interrupt", what, step_index: run.stepIndex };
    const a = await ask(run.human!, run.s, question);
    if (a.kind === "interrupt") return next; // go on: make the cancelled move again
    const step = run.stepIndex === undefined ? undefined : run.s.steps[run.stepIndex];
    if (step && step.status === "pending") {
      step.error = { code: "INTERRUPTED", message: `interrupted (Ctrl-C) during ${what}` };
      this.finishStep(run.s, step, "failed");
    }
    if (a.outcome === "defer") return this.pause(run.s, question, a.reason);
    return this.end(
      run.s,
      STOP_STATUS[a.outcome],
      partialAnswer(run.s),
      `${a.outcome} by ${a.answered_by}: ${a.reason}`,
    );
  }

  /** One move of the loop: does what `next` says and returns what comes after it. */
  private async move(run: Run, next: Next): Promise<Next> {
    const { s } = run;
    switch (next.kind) {
      case "start": {
        let snap: PerceptionSnapshot;
        try {
          snap = await this.perceive(run, { mode: "user_query" }, "user_query");
        } catch (e) {
          if (!unusableReply(e) || next.retried) throw e;
          return { kind: "start", retried: true };
        }
        if (snap.original_goal_achieved) return this.end(s, "succeeded", snap.solution_summary);
        return { kind: "decide", mode: "initial", snapshot: snap, reason: "initial", trigger: "snapshot:0" };
      }
      case "decide": {
        let d: DecisionOutput;
        try {
          d = await this.decide(run, next);
        } catch (e) {
          if (!unusableReply(e)) throw e;
          return this.afterUnusableDecision(run, next, e);
        }
        this.adoptPlan(s, d, next.reason, next.trigger);
        return { kind: "step", decision: d };
      }
      case "step": {
        this.checkBudgets(run);
        const step = this.beginStep(s, next.decision);
        run.stepIndex = step.index;
        if (step.type === "CONCLUDE") {
          this.finishStep(s, step, "completed");
          return this.end(s, "succeeded", step.conclusion ?? "");
        }
        if (step.type === "NOP") {
          this.finishStep(s, step, "clarification_needed");
          const question: Question = {
            kind: "clarification",
            question: step.question ?? "",
            step_index: step.index,
            context: s.original_query,
          };
          if (!run.human)
            return this.pause(s, question, "the agent asked a question and waits for a human answer");
          return { kind: "ask", question, step };
        }
        return { kind: "run_code", step };
      }
      case "run_code": {
        const { step } = next;
        const { guards } = this.deps.profile;
        const namespaces = { ...this.deps.services, ...this.deps.hooks?.namespaces?.(s, step) };
        if (guards.code) {
          const g = guardCode(step.code ?? "", this.deps.host.tools(), { namespaces });
          if (!g.ok) return this.rejectCode(run, step, g.findings);
        }
        const heldAt = run.human?.waited?.ms ?? 0;
        const result = await this.execute(step.code ?? "", run.host, this.deps.profile.sandbox, {
          signal: run.signal,
          heldMs: () => (run.human?.waited?.ms ?? 0) - heldAt,
          namespaces,
          onLog: (line: string) => this.emit({ type: "log", line }),
        });
        // A hook's stop (a sub-agent's report, a handoff) ends the session whatever value the code returned.
        const stop = await this.deps.hooks?.afterCode?.(s, step);
        if (!stop && result.ok && guards.result) {
          // Errors disguised as values ("Error: …", empty, NaN) are failures, whatever the code thought.
          const g = guardResult(result.value);
          if (!g.ok) Object.assign(result, { ok: false, error: findingsToStepError(g.findings) });
        }
        step.execution_result = result;
        step.error = result.error;
        this.deps.recorder.saveStep(s.session_id, step);
        if (stop) {
          this.finishStep(s, step, result.ok ? "completed" : "failed");
          return this.end(s, stop.status, stop.answer, stop.reason);
        }
        return { kind: "judge", step };
      }
      case "judge":
        try {
          return await this.judge(run, next.step);
        } catch (e) {
          // Perception's reply could not be used even after its repair round: ask it once more, then fail typed.
          if (!unusableReply(e) || next.retried) throw e;
          return { ...next, retried: true };
        }
      case "ask":
        return this.answer(run, next.question, next.step);
      case "end":
        return next;
    }
  }

  /** Perceive a step's result: done, next step, replan — or, when its attempts are used up, ask or stop. */
  private async judge(run: Run, step: Step): Promise<Next> {
    const { s } = run;
    const result = step.execution_result!;
    const snap = await this.perceive(run, { mode: "step_result", step }, "step_result", step.index);
    step.perception = snap;
    if (result.ok && snap.original_goal_achieved) {
      this.finishStep(s, step, "completed");
      return this.end(s, "succeeded", snap.solution_summary);
    }
    const ok = result.ok && snap.local_goal_achieved;
    this.finishStep(s, step, ok ? "completed" : "failed");
    if (!ok)
      return this.afterFailure(
        run,
        step,
        snap,
        step.error ? `${step.error.code}: ${step.error.message}` : snap.local_reasoning,
      );
    return {
      kind: "decide",
      mode: "mid_session",
      snapshot: snap,
      reason: "next_step",
      trigger: `step:${step.index}`,
    };
  }

  /**
   * Code a guard refused goes straight back to the decision — no sandbox run, no tool call, no perception —
   * and counts as an attempt.
   */
  private rejectCode(run: Run, step: Step, findings: Finding[]): Next {
    const error = findingsToStepError(findings)!;
    step.execution_result = { ok: false, logs: [], error, tool_calls: [], duration_ms: 0 };
    step.error = error;
    this.finishStep(run.s, step, "failed");
    return this.afterFailure(
      run,
      step,
      run.s.snapshots.at(-1)!.snapshot,
      `the code was not run: ${error.message}`,
    );
  }

  /** A failed step: replan with the failure as feedback, or — its attempts used up — ask the human or stop. */
  private afterFailure(run: Run, step: Step, snap: PerceptionSnapshot, why: string): Next {
    const max = this.deps.profile.budgets.max_attempts_per_step;
    if (step.attempts >= max) {
      if (!run.human) {
        throw new BudgetExceeded(
          "BUDGET_ATTEMPTS",
          `step ${step.plan_step} failed ${step.attempts} times (the limit is ${max}): ${why}`,
        );
      }
      const question: Question = {
        kind: "tool_failure",
        step_index: step.index,
        description: step.description,
        code: step.code ?? "",
        error: step.error ?? { code: "STEP_FAILED", message: why },
        attempts: step.attempts,
      };
      return { kind: "ask", question, step };
    }
    return {
      kind: "decide",
      mode: "mid_session",
      snapshot: snap,
      guidance: `The last step failed (${why}). It has been tried ${step.attempts} of ${max} times. Fix what failed, or change the plan.`,
      reason: "replan_after_failure",
      trigger: `step:${step.index}`,
    };
  }

  /**
   * The decision's reply could not be used even after the provider's repair round: decide again, showing the
   * model why; if that fails too, ask the human how to go on (or, with no one to ask, fail with the typed error).
   */
  private async afterUnusableDecision(
    run: Run,
    next: Extract<Next, { kind: "decide" }>,
    e: ModelError,
  ): Promise<Next> {
    const why = `${e.code}: ${e.message}`;
    const add = (text: string) => [next.guidance, text].filter(Boolean).join("\n");
    if (!next.retried) {
      return {
        ...next,
        retried: true,
        guidance: add(
          `Your last reply could not be used (${why}). Reply with one JSON object that follows the schema exactly.`,
        ),
      };
    }
    if (!run.human) throw e;
    const question: Question = {
      kind: "clarification",
      question: `The model could not give a usable next step twice (${why}). How should the agent go on?`,
      context: run.s.original_query,
    };
    const a = await ask(run.human, run.s, question);
    if (a.kind === "stop") {
      if (a.outcome === "defer") return this.pause(run.s, question, a.reason);
      return this.end(
        run.s,
        STOP_STATUS[a.outcome],
        partialAnswer(run.s),
        `${a.outcome} by ${a.answered_by}: ${a.reason}`,
      );
    }
    const advice =
      a.choice === "answer"
        ? `The human says how to go on: ${a.text}`
        : "The human gave no advice: keep the next step simple.";
    return { ...next, retried: false, guidance: add(advice) };
  }

  /** Ask the human and turn the answer into what comes next. */
  private async answer(run: Run, question: Question, maybeStep: Step | undefined): Promise<Next> {
    const { s } = run;
    const a = await ask(run.human!, s, question);
    if (a.kind === "stop") {
      if (a.outcome === "defer") return this.pause(s, question, a.reason);
      return this.end(
        s,
        STOP_STATUS[a.outcome],
        partialAnswer(s),
        `${a.outcome} by ${a.answered_by}: ${a.reason}`,
      );
    }
    // An interrupt, or a question about no step (asked again on resume): go on from the last perception.
    if (a.kind === "interrupt" || !maybeStep) return this.afterPause(run);
    const step = maybeStep;
    const snapshot = s.snapshots.at(-1)!.snapshot;
    const decideAfter = (guidance: string, reason: PlanReason): Next => ({
      kind: "decide",
      mode: "mid_session",
      snapshot,
      guidance,
      reason,
      trigger: `step:${step.index}`,
    });
    switch (a.kind) {
      case "clarification":
        step.human_input = a.choice === "answer" ? a.text : "(no answer)";
        this.finishStep(s, step, "completed");
        return decideAfter(
          a.choice === "answer"
            ? `The human answered your question "${step.question}": ${a.text}`
            : `The human did not answer "${step.question}": go on with the most reasonable assumption, and say which.`,
          "clarification",
        );
      case "tool_failure":
        if (a.choice === "retry" || a.choice === "edit_code") {
          const code = a.choice === "edit_code" ? a.code : (step.code ?? "");
          const retry = this.beginStep(s, { ...stepDecision(step), code, description: step.description });
          retry.human_input =
            a.choice === "edit_code" ? "the human edited the code" : "the human asked to retry";
          run.stepIndex = retry.index;
          return { kind: "run_code", step: retry };
        }
        if (a.choice === "give_result") {
          step.human_input = `the human gave the result: ${JSON.stringify(a.value)}`;
          step.execution_result = { ok: true, value: a.value, logs: [], tool_calls: [], duration_ms: 0 };
          step.error = undefined;
          return { kind: "judge", step };
        }
        step.human_input = "the human skipped this step";
        this.finishStep(s, step, "skipped");
        return decideAfter(
          `The human chose to skip step ${step.plan_step} ("${step.description}"). Go on without it.`,
          "human_edit",
        );
      default:
        throw new Error(`the loop asked a ${question.kind} question and got a ${a.kind} answer`);
    }
  }

  /** Going on after a pause at an interrupt: decide again from the last perception (or start over). */
  private afterPause(run: Run): Next {
    const last = run.s.snapshots.at(-1);
    if (!last) return { kind: "start" };
    const plan = currentPlan(run.s);
    return {
      kind: "decide",
      mode: plan ? "mid_session" : "initial",
      snapshot: last.snapshot,
      guidance:
        "The session was paused and is going on again (the human's answers are above): pick up where it stopped.",
      reason: plan ? "next_step" : "initial",
      trigger: `snapshot:${last.index}`,
    };
  }

  /** Stop here with the question kept, so `pda resume` can ask it again, even after a restart. */
  private pause(s: AgentSession, question: Question, reason: string): Next {
    s.pending_human = question as Record<string, unknown>;
    s.pending_question = questionText(question);
    return this.end(s, "awaiting_human", null, reason);
  }

  private async perceive(
    run: Run,
    input: Pick<PerceptionInput, "mode" | "step">,
    type: SnapshotType,
    stepIndex?: number,
  ): Promise<PerceptionSnapshot> {
    const { s } = run;
    const full: PerceptionInput = {
      ...input,
      memory: run.memory,
      query: run.query,
      queryFindings: run.queryFindings,
      humanInputs: s.state.human_inputs,
      plan: currentPlan(s),
      history: s.steps,
      signal: run.signal,
    };
    const out = await this.callPhase(
      run,
      "perception",
      this.deps.hooks?.perception ?? defaultPerception,
      full,
    );
    const record = {
      index: s.snapshots.length,
      snapshot_type: type,
      snapshot: out.snapshot,
      step_index: stepIndex,
      created_at: this.clock.iso(),
    };
    s.snapshots.push(record);
    s.state.confidence = out.snapshot.confidence;
    if (out.snapshot.solution_summary) s.state.solution_summary = out.snapshot.solution_summary;
    this.deps.recorder.saveSnapshot(s.session_id, record);
    this.emit({ type: "perception", mode: type, snapshot: out.snapshot });
    return out.snapshot;
  }

  private async decide(run: Run, next: Extract<Next, { kind: "decide" }>): Promise<DecisionOutput> {
    const { s } = run;
    const full: DecisionInput = {
      mode: next.mode,
      snapshot: next.snapshot,
      guidance: next.guidance,
      memory: run.memory,
      query: run.query,
      humanInputs: s.state.human_inputs,
      tools: this.selectTools(run, next),
      toolStats: run.toolStats,
      plan: currentPlan(s),
      history: s.steps,
      signal: run.signal,
    };
    const out = await this.callPhase(run, "decision", this.deps.hooks?.decision ?? defaultDecision, full);
    return out.decision;
  }

  /** A model phase within the budgets, its call counted and logged. */
  private callPhase<I, O extends { result: GenerateResult<unknown>; prompt: string }>(
    run: Run,
    role: "perception" | "decision",
    phase: Phase<I, O>,
    input: I,
  ): Promise<O> {
    this.checkBudgets(run);
    const ctx = { recorder: this.deps.recorder, clock: this.clock, account: run.account };
    return trackModelCall(ctx, run.s, role, this.deps.models[role], phase, input);
  }

  /** The tools the decision sees: the top K by relevance and reliability, plus every tool the plan has used. */
  private selectTools(run: Run, next: Extract<Next, { kind: "decide" }>) {
    const tools = this.deps.host.tools();
    const k = this.deps.profile.tool_top_k;
    if (tools.length <= k) return tools;
    const used = run.s.steps.flatMap((st) => (st.code ? findToolCalls(st.code, tools) : []));
    // Built on the first decision over this tool list that has more tools than it may see, then shared.
    return toolRankerFor(tools).rank({
      query: run.query,
      step: [next.snapshot.result_requirement, currentPlan(run.s)?.plan_text.join(" ")]
        .filter(Boolean)
        .join(" "),
      stats: run.toolStatRows,
      topK: k,
      alwaysInclude: used,
    }).tools;
  }

  /** A new plan version only when the plan text changes; moving to the next step of the same plan is not one. */
  private adoptPlan(s: AgentSession, d: DecisionOutput, reason: PlanReason, trigger: string) {
    const plan = nextPlanVersion(s, d, reason, trigger, this.clock.iso());
    if (!plan) return;
    s.plan_versions.push(plan);
    this.deps.recorder.savePlanVersion(s.session_id, plan);
    this.emit({ type: "plan", plan });
  }

  private beginStep(s: AgentSession, d: StepDecision): Step {
    const plan = currentPlan(s)!;
    const step = newStep(s, d);
    s.steps.push(step);
    plan.steps.push(step.index);
    this.deps.recorder.saveStep(s.session_id, step);
    this.deps.recorder.savePlanVersion(s.session_id, plan);
    this.emit({ type: "step_start", step });
    return step;
  }

  private finishStep(s: AgentSession, step: Step, status: Step["status"]) {
    step.status = status;
    this.deps.recorder.saveStep(s.session_id, step);
    this.emit({ type: "step_end", step });
  }

  private checkBudgets(run: Run) {
    const stop = run.account.stop();
    if (stop) throw new BudgetExceeded(stop.code, stop.message);
    if (this.deps.signal?.aborted) throw new BudgetExceeded("ABORTED", "the session was cancelled");
  }

  private end(s: AgentSession, status: SessionStatus, answer: string | null, reason?: string): Next {
    s.status = status;
    s.status_reason = reason;
    s.state.final_answer = answer;
    s.state.original_goal_achieved = status === "succeeded";
    return { kind: "end" };
  }

  private emit(event: LoopEvent) {
    this.deps.onEvent?.(event);
  }
}

/** A reply the provider could not turn into a valid value, even after its repair round. */
function unusableReply(e: unknown): e is ModelError {
  return (
    e instanceof ModelError && ["MODEL_INVALID_OUTPUT", "MODEL_TRUNCATED", "MODEL_EMPTY"].includes(e.code)
  );
}

/** The query guard's view of the file system: does a path the user named exist? */
function existsOnDisk(path: string): boolean {
  return existsSync(path.startsWith("~/") ? join(homedir(), path.slice(2)) : path);
}
