/**
 * The Perception–Decision–Action loop (DESIGN.md "The loop"): perceive the query, decide a plan, run its
 * steps, perceive each result, and go on, replan or stop. Each phase lives in its own module; this file only
 * sequences them, keeps the session up to date and writes it to the recorder as it happens.
 */
import { runCode } from "../action/index.js";
import type { Profile } from "../config/index.js";
import {
  BudgetExceeded,
  ModelError,
  errorMessage,
  newId,
  systemClock,
  type AgentSession,
  type Clock,
  type DecisionOutput,
  type PerceptionSnapshot,
  type PlanReason,
  type PlanVersion,
  type SessionRecorder,
  type SessionStatus,
  type SnapshotType,
  type Step,
  type ToolHost,
} from "../core/index.js";
import { decide, type DecisionInput, decisionPrompt } from "../decision/index.js";
import type { GenerateResult, ModelProvider } from "../llm/types.js";
import { perceive, perceptionPrompt, type PerceptionInput } from "../perception/index.js";
import { attemptsOf, budgetRules, firstStop, type StopRule } from "./budgets.js";
import type { LoopEvent } from "./events.js";
import { scopedHost } from "./scoped-host.js";
import { currentPlan, newSession } from "./session.js";

/** What the loop asks of memory: rendered text for the prompts ("" when there is nothing). */
export interface MemoryService {
  recall(query: string): string;
  toolStats(): string;
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
  onEvent?: (event: LoopEvent) => void;
  signal?: AbortSignal;
}

export interface RunOptions {
  sessionId?: string;
  parentSessionId?: string;
  agent?: string;
}

export class AgentLoop {
  private readonly clock: Clock;
  private readonly rules: StopRule[];
  private readonly execute: typeof runCode;

  constructor(private readonly deps: LoopDeps) {
    this.clock = deps.clock ?? systemClock;
    this.rules = budgetRules(deps.profile.budgets);
    this.execute = deps.execute ?? runCode;
  }

  /** Runs one session to an end state and returns it. Throws only when a model cannot be reached at all. */
  async run(query: string, options: RunOptions = {}): Promise<AgentSession> {
    const started = this.clock.now();
    const s = newSession(query, options.sessionId ?? (this.deps.newId ?? newId)(), this.clock.iso(), {
      parent_session_id: options.parentSessionId,
      agent: options.agent,
    });
    const host = scopedHost(this.deps.host, this.clock.now, this.clock.iso);
    let stepIndex: number | null = null;
    const unsubscribe = host.onCall((record) => {
      s.usage.tool_calls += 1;
      this.deps.recorder.recordToolCall(s.session_id, stepIndex, record);
      this.emit({ type: "tool_call", record });
    });
    this.deps.recorder.startSession(s);
    this.emit({ type: "session_start", session_id: s.session_id, query });
    let fatal: unknown;
    try {
      await this.phases(s, host, started, (i) => (stepIndex = i));
    } catch (e) {
      if (e instanceof BudgetExceeded) this.end(s, "budget_exhausted", partialAnswer(s), e.message);
      else {
        this.end(s, "failed", null, errorMessage(e));
        if (e instanceof ModelError && e.exitCode === 3) fatal = e;
      }
    } finally {
      unsubscribe();
      s.usage.ms = this.clock.now() - started;
      this.deps.recorder.finishSession(s);
      this.emit({ type: "session_end", session: s });
    }
    if (fatal) throw fatal;
    return s;
  }

  private async phases(s: AgentSession, host: ToolHost, started: number, setStep: (i: number) => void) {
    const memory = this.deps.memory?.recall(s.original_query) ?? "";
    let snap = await this.perceive(s, started, { mode: "user_query", memory }, "user_query");
    if (snap.original_goal_achieved) return this.end(s, "succeeded", snap.solution_summary);

    let d = await this.decide(s, started, { mode: "initial", snapshot: snap, memory });
    this.adoptPlan(s, d, "initial", `snapshot:${s.snapshots.length - 1}`);

    for (;;) {
      this.checkBudgets(s, started);
      const step = this.beginStep(s, d);
      setStep(step.index);
      if (step.type === "CONCLUDE") {
        this.finishStep(s, step, "completed");
        return this.end(s, "succeeded", step.conclusion ?? "");
      }
      if (step.type === "NOP") {
        this.finishStep(s, step, "clarification_needed");
        s.pending_question = step.question;
        return this.end(s, "awaiting_human", null, "the agent asked a question and waits for a human answer");
      }

      const result = await this.execute(step.code ?? "", host, this.deps.profile.sandbox, {
        signal: this.deps.signal,
        onLog: (line) => this.emit({ type: "log", line }),
      });
      step.execution_result = result;
      step.error = result.error;
      this.deps.recorder.saveStep(s.session_id, step);

      snap = await this.perceive(
        s,
        started,
        { mode: "step_result", memory, step },
        "step_result",
        step.index,
      );
      step.perception = snap;
      if (result.ok && snap.original_goal_achieved) {
        this.finishStep(s, step, "completed");
        return this.end(s, "succeeded", snap.solution_summary);
      }
      const ok = result.ok && snap.local_goal_achieved;
      this.finishStep(s, step, ok ? "completed" : "failed");
      const max = this.deps.profile.budgets.max_attempts_per_step;
      if (!ok && step.attempts >= max) {
        throw new BudgetExceeded(
          "BUDGET_ATTEMPTS",
          `step ${step.plan_step} failed ${step.attempts} times (the limit is ${max}): ${step.error?.message ?? snap.local_reasoning}`,
        );
      }
      const guidance = ok
        ? undefined
        : `The last step failed (${step.error ? `${step.error.code}: ${step.error.message}` : snap.local_reasoning}). ` +
          `It has been tried ${step.attempts} of ${max} times. Fix what failed, or change the plan.`;
      d = await this.decide(s, started, { mode: "mid_session", snapshot: snap, memory, guidance });
      this.adoptPlan(s, d, ok ? "next_step" : "replan_after_failure", `step:${step.index}`);
    }
  }

  private async perceive(
    s: AgentSession,
    started: number,
    input: Pick<PerceptionInput, "mode" | "memory" | "step">,
    type: SnapshotType,
    stepIndex?: number,
  ): Promise<PerceptionSnapshot> {
    this.checkBudgets(s, started);
    const full: PerceptionInput = {
      ...input,
      query: s.original_query,
      humanInputs: s.state.human_inputs,
      plan: currentPlan(s),
      history: s.steps,
      signal: this.deps.signal,
    };
    const out = await this.track(
      s,
      "perception",
      this.deps.models.perception,
      () => perceptionPrompt(full),
      () => perceive(this.deps.models.perception, full),
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

  private async decide(
    s: AgentSession,
    started: number,
    input: Pick<DecisionInput, "mode" | "snapshot" | "memory" | "guidance">,
  ): Promise<DecisionOutput> {
    this.checkBudgets(s, started);
    const full: DecisionInput = {
      ...input,
      query: s.original_query,
      humanInputs: s.state.human_inputs,
      tools: this.deps.host.tools(),
      toolStats: this.deps.memory?.toolStats() ?? "",
      plan: currentPlan(s),
      history: s.steps,
      signal: this.deps.signal,
    };
    const out = await this.track(
      s,
      "decision",
      this.deps.models.decision,
      () => decisionPrompt(full),
      () => decide(this.deps.models.decision, full),
    );
    return out.decision;
  }

  /** Calls a model phase, counting usage and logging the call (failed ones too). */
  private async track<T extends { result: GenerateResult<unknown>; prompt: string }>(
    s: AgentSession,
    role: string,
    model: ModelProvider,
    promptOf: () => { system: string; prompt: string },
    call: () => Promise<T>,
  ): Promise<T> {
    const startedAt = this.clock.iso();
    const t0 = this.clock.now();
    try {
      const out = await call();
      const { usage } = out.result;
      s.usage.llm_calls += out.result.attempts;
      s.usage.input_tokens += usage.input_tokens;
      s.usage.output_tokens += usage.output_tokens;
      s.usage.tokens += usage.input_tokens + usage.output_tokens;
      this.deps.recorder.recordLlmCall(s.session_id, {
        role,
        provider: out.result.provider,
        model: out.result.model,
        ok: true,
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        latency_ms: out.result.latency_ms,
        attempts: out.result.attempts,
        prompt: out.prompt,
        raw_response: out.result.raw,
        value: out.result.value,
        started_at: startedAt,
      });
      return out;
    } catch (e) {
      s.usage.llm_calls += 1;
      const p = promptOf();
      this.deps.recorder.recordLlmCall(s.session_id, {
        role,
        provider: model.provider,
        model: model.model,
        ok: false,
        input_tokens: 0,
        output_tokens: 0,
        latency_ms: this.clock.now() - t0,
        attempts: 1,
        prompt: `${p.system}\n${p.prompt}`,
        raw_response: (e as { raw?: string }).raw ?? "",
        error: `${(e as { code?: string }).code ?? "ERROR"}: ${errorMessage(e)}`,
        started_at: startedAt,
      });
      throw e;
    }
  }

  /** A new plan version only when the plan text changes; moving to the next step of the same plan is not one. */
  private adoptPlan(s: AgentSession, d: DecisionOutput, reason: PlanReason, trigger: string) {
    const cur = currentPlan(s);
    if (cur && sameLines(cur.plan_text, d.plan_text)) return;
    const plan: PlanVersion = {
      version: (cur?.version ?? 0) + 1,
      plan_text: d.plan_text,
      steps: [],
      reason: cur ? reason : "initial",
      triggered_by: trigger,
      created_at: this.clock.iso(),
    };
    s.plan_versions.push(plan);
    this.deps.recorder.savePlanVersion(s.session_id, plan);
    this.emit({ type: "plan", plan });
  }

  private beginStep(s: AgentSession, d: DecisionOutput): Step {
    const plan = currentPlan(s)!;
    const step: Step = {
      index: s.steps.length,
      plan_step: d.step_index,
      description: d.description,
      type: d.type,
      code: d.type === "CODE" ? d.code : undefined,
      conclusion: d.type === "CONCLUDE" ? d.conclusion : undefined,
      question: d.type === "NOP" ? d.question : undefined,
      status: "pending",
      attempts: d.type === "CODE" ? attemptsOf(s, d.step_index) + 1 : 1,
      plan_version: plan.version,
    };
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

  private checkBudgets(s: AgentSession, started: number) {
    const stop = firstStop(this.rules, s, this.clock.now(), started);
    if (stop) throw new BudgetExceeded(stop.code, stop.message);
    if (this.deps.signal?.aborted) throw new BudgetExceeded("ABORTED", "the session was cancelled");
  }

  private end(s: AgentSession, status: SessionStatus, answer: string | null, reason?: string) {
    s.status = status;
    s.status_reason = reason;
    s.state.final_answer = answer;
    s.state.original_goal_achieved = status === "succeeded";
  }

  private emit(event: LoopEvent) {
    this.deps.onEvent?.(event);
  }
}

function sameLines(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((line, i) => line.trim() === b[i]!.trim());
}

/** The best answer a stopped session has: perception's summary if it had one, else the last good result. */
function partialAnswer(s: AgentSession): string | null {
  if (s.state.solution_summary && s.state.solution_summary !== "not ready yet")
    return s.state.solution_summary;
  const good = [...s.steps].reverse().find((st) => st.execution_result?.ok);
  return good ? JSON.stringify(good.execution_result!.value) : null;
}
