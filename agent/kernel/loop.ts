/**
 * The Perception–Decision–Action loop (DESIGN.md "The loop"): perceive the query, decide a plan, run its
 * steps, perceive each result, and go on, replan or stop. This file sequences the moves (next.ts); what the
 * models are shown and asked lives in model-moves.ts, what involves a person in human-moves.ts, and every
 * write to the session and its log in session-log.ts.
 */
import { randomInt } from "node:crypto";
import { runCode } from "../../action/index.js";
import {
  BudgetExceeded,
  Cancelled,
  ConfigError,
  ModelError,
  ToolError,
  errorMessage,
  newId,
  newSession,
  systemClock,
  type AgentSession,
  type Clock,
  type DecisionOutput,
  type ExecutionResult,
  type PerceptionSnapshot,
  type Step,
} from "../../core/index.js";
import { findingsToStepError, guardCode, guardResult, type Finding } from "../../heuristics/index.js";
import { approvalGate, pendingQuestion, WaitClock, type HumanDeps } from "./human.js";
import { answer, askAboutFailure, askHowToGoOn, clarify, interruptible, stepHalted } from "./human-moves.js";
import { StepJournal } from "./journal.js";
import { decide, perceive, prepare, serversDown } from "./model-moves.js";
import {
  checkBudgets,
  end,
  withGuidance,
  type Decide,
  type LoopContext,
  type Next,
  type Run,
} from "./next.js";
import { partialAnswer } from "./plan.js";
import { scopedHost } from "./scoped-host.js";
import { SessionLog } from "./session-log.js";
import { SpendLedger } from "./spend.js";
import type { LoopDeps, RunOptions, SessionDriver } from "./deps.js";
import type { StepControl } from "./hooks.js";

export class AgentLoop implements SessionDriver {
  private readonly clock: Clock;
  private readonly log: SessionLog;
  private readonly ctx: LoopContext;
  private readonly ledger: SpendLedger;
  private readonly execute: typeof runCode;
  private readonly human?: HumanDeps;

  constructor(private readonly deps: LoopDeps) {
    this.clock = deps.clock ?? systemClock;
    this.log = new SessionLog(deps.recorder, this.clock, deps.onEvent);
    this.ctx = { deps, clock: this.clock, log: this.log };
    this.ledger = deps.ledger ?? new SpendLedger();
    this.execute = deps.execute ?? runCode;
    if (deps.human) {
      this.human = {
        channel: deps.human,
        recorder: deps.recorder,
        clock: this.clock,
        signal: deps.signal,
        emit: (e) => this.log.emit(e),
      };
    }
  }

  /** Runs one session to an end state and returns it. Throws only when a model cannot be reached at all. */
  async run(query: string, options: RunOptions = {}): Promise<AgentSession> {
    const s = newSession(query, options.sessionId ?? (this.deps.newId ?? newId)(), this.clock.iso(), {
      parent_session_id: options.parentSessionId,
      agent: options.agent,
      profile: this.deps.profileName,
    });
    this.log.start(s);
    for (const c of options.priorCalls ?? []) this.log.toolCall(s, undefined, c);
    return this.drive(s, { kind: "start" });
  }

  /**
   * Continues a session another agent handed over (agent/team/handoff.ts): this agent decides the next step with
   * everything so far in view and `guidance` (who handed over and why) as feedback.
   */
  async takeOver(session: AgentSession, guidance: string): Promise<AgentSession> {
    const snapshot = session.snapshots.at(-1)?.snapshot;
    if (!snapshot) throw new ConfigError(`session ${session.session_id} has nothing to hand over yet`);
    const s = reopen(session);
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

  /**
   * Continues a session paused on a human (status awaiting_human): asks the pending question again. A session
   * left "running" by a process that died (the caller checks that it did) goes on from its last step: this
   * process takes it over (its row names this process as the owner) and makes the move that was in flight.
   */
  async resume(session: AgentSession): Promise<AgentSession> {
    if (session.status === "running") return this.continueInterrupted(session);
    const question = pendingQuestion(session);
    if (session.status !== "awaiting_human" || !question) {
      throw new ConfigError(`session ${session.session_id} is ${session.status}, not waiting on a question`);
    }
    const waiting = session.waiting_on && session.steps[session.waiting_on.step_index];
    if (waiting?.type === "CODE" && waiting.status === "pending") {
      // A sub-agent the step called waits on the question: the step runs again by replay, which resumes the
      // sub-agent, which asks it.
      const s = reopen(session);
      this.log.emit({ type: "session_start", session_id: s.session_id, query: s.original_query });
      return this.drive(s, { kind: "run_code", step: s.steps[waiting.index]! });
    }
    const about =
      "step_index" in question && question.step_index !== undefined ? question.step_index : undefined;
    const step = about === undefined ? undefined : session.steps[about];
    // A CODE step a question paused in the middle (an approval, a call in doubt, Ctrl-C): it runs again by
    // replay, and a question asked inside it is asked again when the code gets there.
    const inStep = step?.type === "CODE" && step.status === "pending";
    const s = reopen(session);
    this.log.emit({ type: "session_start", session_id: s.session_id, query: s.original_query });
    if (inStep && (question.kind === "approval" || question.kind === "in_doubt"))
      return this.drive(s, { kind: "run_code", step: s.steps[step.index]! });
    // The step the question is about, if any (an interrupt outside a step, or an unusable-output question, has
    // none to finish).
    const target = question.kind === "interrupt" && !inStep ? undefined : step && s.steps[step.index];
    return this.drive(s, { kind: "ask", question, step: target });
  }

  private continueInterrupted(session: AgentSession): Promise<AgentSession> {
    // Calls its dead process sent and never saw end may or may not have happened.
    this.deps.journal?.markInDoubt(session.session_id);
    const s = reopen(session);
    this.log.start(s);
    return this.drive(s, interruptedMove(s));
  }

  private async drive(s: AgentSession, first: Next): Promise<AgentSession> {
    const started = this.clock.now();
    const msBefore = s.usage.ms;
    // Every field of the drive's state is set here; prepare() then fills in what the prompts see of the query.
    const human = this.human && { ...this.human, waited: new WaitClock(() => this.clock.now()) };
    const journal = new StepJournal(this.deps.journal, s, human, this.clock.now, this.clock.iso);
    const run: Run = {
      s,
      stepIndex: undefined,
      memory: "",
      // The approval gate sits inside the journal (a replayed call is not asked about again; a denied one
      // stays denied) and inside the per-session host, so denied calls are logged like any failed call.
      host: scopedHost(
        journal.host(
          human
            ? approvalGate(
                this.deps.host,
                human,
                s,
                () => run.stepIndex,
                (q, a, t) => journal.halt(q, a, t),
              )
            : this.deps.host,
        ),
        this.clock.now,
        this.clock.iso,
      ),
      journal,
      query: s.original_query,
      queryFindings: "",
      toolStats: "",
      signal: this.deps.signal,
      human,
      // Time spent waiting on a person does not count against the wall-time budget.
      account: this.ledger.open(
        s,
        this.deps.profile.budgets,
        () => this.clock.now() - (human?.waited?.ms ?? 0) - started,
      ),
    };
    const unsubscribe = run.host.onCall((record) => this.log.toolCall(s, run.stepIndex, record));
    const move = (next: Next) => this.move(run, next);
    let fatal: unknown;
    try {
      const refused = prepare(this.ctx, run);
      let next = refused ? end(s, "failed", null, refused) : first;
      while (next.kind !== "end") next = await interruptible(this.ctx, run, next, move);
    } catch (e) {
      // Cancelled (Ctrl-C): whatever was in flight failed because of it, so the session was aborted.
      if (e instanceof Cancelled || this.deps.signal?.aborted)
        end(s, "aborted", partialAnswer(s), `cancelled: ${errorMessage(this.deps.signal?.reason ?? e)}`);
      else if (e instanceof BudgetExceeded) end(s, "budget_exhausted", partialAnswer(s), e.message);
      else {
        end(s, "failed", null, errorMessage(e));
        // No model, or no server at all, to reach: the caller exits 3 with the reason.
        if ((e instanceof ModelError || e instanceof ToolError) && e.exitCode === 3) fatal = e;
      }
    } finally {
      unsubscribe();
      this.ledger.close(run.account);
      s.usage.ms = msBefore + (this.clock.now() - started);
      this.log.finish(s);
    }
    if (fatal) throw fatal;
    return s;
  }

  /** One move of the loop: does what `next` says and returns what comes after it. */
  private async move(run: Run, next: Next): Promise<Next> {
    const { s } = run;
    switch (next.kind) {
      case "start": {
        serversDown(this.ctx); // every server down: end before spending a model call
        let snap: PerceptionSnapshot;
        try {
          snap = await perceive(this.ctx, run, { mode: "user_query" }, "user_query");
        } catch (e) {
          if (!unusableReply(e) || next.retried) throw e;
          return { kind: "start", retried: true };
        }
        if (snap.original_goal_achieved) return end(s, "succeeded", snap.solution_summary);
        return { kind: "decide", mode: "initial", snapshot: snap, reason: "initial", trigger: "snapshot:0" };
      }
      case "decide": {
        let d: DecisionOutput;
        try {
          d = await decide(this.ctx, run, next);
        } catch (e) {
          if (!unusableReply(e)) throw e;
          return afterUnusableDecision(run, next, e);
        }
        this.log.adoptPlan(s, d, next.reason, next.trigger);
        return { kind: "step", decision: d };
      }
      case "step": {
        checkBudgets(run, this.deps.signal);
        const step = this.log.beginStep(s, next.decision);
        run.stepIndex = step.index;
        if (step.type === "CONCLUDE") {
          this.log.finishStep(s, step, "completed");
          return end(s, "succeeded", step.conclusion ?? "");
        }
        if (step.type === "NOP") {
          this.log.finishStep(s, step, "clarification_needed");
          return clarify(run, step);
        }
        return { kind: "run_code", step };
      }
      case "run_code":
        run.stepIndex = next.step.index;
        return this.runCode(run, next.step);
      case "judge":
        try {
          return await this.judge(run, next.step);
        } catch (e) {
          // Perception's reply could not be used even after its repair round: ask it once more, then fail typed.
          if (!unusableReply(e) || next.retried) throw e;
          return { ...next, retried: true };
        }
      case "ask":
        return answer(this.ctx, run, next.question, next.step);
      case "end":
        return next;
    }
  }

  /** A CODE step: the code guard, the sandbox over the session's host, a hook's stop, the result guard. */
  private async runCode(run: Run, step: Step): Promise<Next> {
    const { s } = run;
    const { guards } = this.deps.profile;
    const control: StepControl = {
      diverged: (e) => run.journal.diverged(e),
      paused: (q, a, via) => run.journal.pausedWith(q, a, via),
    };
    const namespaces = { ...this.deps.services, ...this.deps.hooks?.namespaces?.(s, step, control) };
    if (guards.code) {
      const g = guardCode(step.code ?? "", this.deps.host.tools(), { namespaces });
      if (!g.ok) return this.rejectCode(run, step, g.findings);
    }
    if (step.replay_seed === undefined) {
      // Fixed before the first run, so a run that replays the step's calls sees the same randomness (its clock
      // readings are logged with its calls).
      step.replay_seed = randomInt(2 ** 31);
      this.log.saveStep(s, step);
    }
    const heldAt = run.human?.waited?.ms ?? 0;
    const halt = new AbortController();
    run.journal.begin(step.index, (why) => halt.abort(why));
    let result: ExecutionResult;
    let after: ReturnType<StepJournal["end"]>;
    try {
      result = await this.execute(step.code ?? "", run.host, this.deps.profile.sandbox, {
        signal: run.signal ? AbortSignal.any([run.signal, halt.signal]) : halt.signal,
        heldMs: () => (run.human?.waited?.ms ?? 0) - heldAt,
        namespaces,
        onLog: (line: string) => this.log.emit({ type: "log", line }),
        seed: step.replay_seed,
      });
    } finally {
      after = run.journal.end();
    }
    // A question inside the step was answered with a pause or an abort: the session stops on it.
    if (after.halt) {
      await this.deps.hooks?.afterHalt?.(s, step, after.halt.answer.outcome === "defer");
      return stepHalted(this.ctx, run, step, after.halt);
    }
    if (after.failure && result.ok) {
      // Whatever the code made of it, a call in doubt that was not to be repeated, or a replay that left the
      // log, fails the step.
      const f = after.failure;
      Object.assign(result, { ok: false, error: { code: f.code, message: f.message, tool: f.tool } });
      delete result.value;
    }
    // A hook's stop (a sub-agent's report, a handoff) ends the session whatever value the code returned.
    const stop = await this.deps.hooks?.afterCode?.(s, step);
    if (!stop && result.ok && guards.result) {
      // Errors disguised as values ("Error: …", empty, NaN) are failures, whatever the code thought.
      const g = guardResult(result.value);
      if (!g.ok) Object.assign(result, { ok: false, error: findingsToStepError(g.findings) });
    }
    step.execution_result = result;
    step.error = result.error;
    this.log.saveStep(s, step);
    if (stop) {
      this.log.finishStep(s, step, result.ok ? "completed" : "failed");
      return end(s, stop.status, stop.answer, stop.reason);
    }
    return { kind: "judge", step };
  }

  /** Perceive a step's result: done, next step, replan — or, when its attempts are used up, ask or stop. */
  private async judge(run: Run, step: Step): Promise<Next> {
    const { s } = run;
    const result = step.execution_result!;
    const snap = await perceive(this.ctx, run, { mode: "step_result", step }, "step_result", step.index);
    step.perception = snap;
    if (result.ok && snap.original_goal_achieved) {
      this.log.finishStep(s, step, "completed");
      return end(s, "succeeded", snap.solution_summary);
    }
    const ok = result.ok && snap.local_goal_achieved;
    this.log.finishStep(s, step, ok ? "completed" : "failed");
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
    this.log.finishStep(run.s, step, "failed");
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
          `step ${step.index} (plan step ${step.plan_step}) failed ${step.attempts} times (the limit is ${max}): ${why}`,
        );
      }
      return askAboutFailure(step, why);
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
}

/**
 * Where a session whose process died goes on, from what its rows hold: the last step's result is perceived
 * again (one model call, then the usual done / next step / replan), a CODE step that was in flight is run
 * again, and a session with no step yet decides (or perceives) again.
 */
export function interruptedMove(s: AgentSession): Next {
  const step = s.steps.at(-1);
  const snapshot = s.snapshots.at(-1)?.snapshot;
  if (step?.execution_result) return { kind: "judge", step };
  if (step?.type === "CODE" && step.status === "pending") return inFlightCode(step);
  if (!snapshot) return { kind: "start" };
  const trigger = step ? `step:${step.index}` : "snapshot:0";
  return step
    ? { kind: "decide", mode: "mid_session", snapshot, reason: "next_step", trigger }
    : { kind: "decide", mode: "initial", snapshot, reason: "initial", trigger };
}

/**
 * A CODE step that was running when its process died: it runs again from the top, and its logged calls are
 * replayed (journal.ts), so none that ended is made twice.
 */
function inFlightCode(step: Step): Next {
  return { kind: "run_code", step };
}

/** A reply the provider could not turn into a valid value, even after its repair round. */
function unusableReply(e: unknown): e is ModelError {
  return e instanceof ModelError && e.unusableReply;
}

/**
 * The decision's reply could not be used even after the provider's repair round: decide again, showing the
 * model why; if that fails too, ask the human how to go on (or, with no one to ask, fail with the typed error).
 */
function afterUnusableDecision(run: Run, next: Decide, e: ModelError): Next | Promise<Next> {
  const why = `${e.code}: ${e.message}`;
  if (!next.retried) {
    const again = `Your last reply could not be used (${why}). Reply with one JSON object that follows the schema exactly.`;
    return { ...withGuidance(next, again), retried: true };
  }
  if (!run.human) throw e;
  return askHowToGoOn(run, next, why);
}

/** A copy of `session` running again, for a drive that continues it (a handoff, a resume); no question left. */
function reopen(session: AgentSession): AgentSession {
  const s: AgentSession = { ...session, status: "running", status_reason: undefined };
  delete s.pending_human;
  delete s.pending_question;
  delete s.waiting_on;
  return s;
}
