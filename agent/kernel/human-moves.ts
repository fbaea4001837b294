/**
 * The loop's moves that involve a person: asking the agent's question (or pausing when no one can answer),
 * Ctrl-C turned into a question, asking how to go on when the model cannot, and turning each answer into the
 * next move — retry, edited code, a given result, a skip, going on after a pause — or a stop.
 */
import type { AgentSession, PlanReason, Step } from "../../core/index.js";
import { STOP_STATUS, questionText, type Question, type StopAnswer } from "../../hil/index.js";
import { ask } from "./human.js";
import type { StepHalt } from "./journal.js";
import { end, withGuidance, type Decide, type LoopContext, type Next, type Run } from "./next.js";
import { partialAnswer, stepDecision } from "./plan.js";
import { currentPlan } from "./session.js";

/** Moves that wait on a model or run code: Ctrl-C cancels them and asks (the others are instant). */
const INTERRUPTIBLE = new Set<Next["kind"]>(["start", "decide", "run_code", "judge"]);

/**
 * Makes one move, interruptible when a person can answer: Ctrl-C cancels the model call or code in flight and
 * asks whether to go on (the move is made again), pause (for pda resume) or abort.
 */
export async function interruptible(
  ctx: LoopContext,
  run: Run,
  next: Next,
  move: (next: Next) => Promise<Next>,
): Promise<Next> {
  const interrupts = run.human ? ctx.deps.interrupts : undefined;
  if (!interrupts || !INTERRUPTIBLE.has(next.kind)) return move(next);
  const session = ctx.deps.signal;
  const phase = new AbortController();
  run.signal = session ? AbortSignal.any([session, phase.signal]) : phase.signal;
  const off = interrupts.subscribe(() => phase.abort(new Error("interrupted (Ctrl-C)")));
  try {
    const after = await move(next);
    return phase.signal.aborted ? interrupted(ctx, run, next) : after;
  } catch (e) {
    if (phase.signal.aborted && !session?.aborted) return interrupted(ctx, run, next);
    throw e;
  } finally {
    off();
    run.signal = session;
  }
}

async function interrupted(ctx: LoopContext, run: Run, next: Next): Promise<Next> {
  const what =
    next.kind === "run_code"
      ? `step ${next.step.index}'s code`
      : next.kind === "decide"
        ? "the decision model call"
        : "the perception model call";
  const question: Question = { kind: "interrupt", what, step_index: run.stepIndex };
  const a = await ask(run.human!, run.s, question);
  // Go on: make the cancelled move again (a CODE step replays the calls it had made: journal.ts).
  if (a.kind === "interrupt") return next;
  const step = run.stepIndex === undefined ? undefined : run.s.steps[run.stepIndex];
  // A paused CODE step stays pending: `pda resume` runs it again by replay.
  const resumable = a.outcome === "defer" && next.kind === "run_code";
  if (step && step.status === "pending" && !resumable) {
    step.error = { code: "INTERRUPTED", message: `interrupted (Ctrl-C) during ${what}` };
    ctx.log.finishStep(run.s, step, "failed");
  }
  return stopped(run.s, question, a);
}

/** A NOP step: the agent's question goes to the person, or the session pauses on it when no one can answer. */
export function clarify(run: Run, step: Step): Next {
  const question: Question = {
    kind: "clarification",
    question: step.question ?? "",
    step_index: step.index,
    context: run.s.original_query,
  };
  if (!run.human) return pause(run.s, question, "the agent asked a question and waits for a human answer");
  return { kind: "ask", question, step };
}

/** A step whose attempts are used up: the person chooses — retry, edit the code, give the result, skip or abort. */
export function askAboutFailure(step: Step, why: string): Next {
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

/** The model could not give a usable decision twice (`why`): the person says how to go on, or stops. */
export async function askHowToGoOn(run: Run, next: Decide, why: string): Promise<Next> {
  const question: Question = {
    kind: "clarification",
    question: `The model could not give a usable next step twice (${why}). How should the agent go on?`,
    context: run.s.original_query,
  };
  const a = await ask(run.human!, run.s, question);
  if (a.kind === "stop") return stopped(run.s, question, a);
  const advice =
    a.choice === "answer"
      ? `The human says how to go on: ${a.text}`
      : "The human gave no advice: keep the next step simple.";
  return { ...withGuidance(next, advice), retried: false };
}

/** Ask the human and turn the answer into what comes next. */
export async function answer(
  ctx: LoopContext,
  run: Run,
  question: Question,
  maybeStep: Step | undefined,
): Promise<Next> {
  const { s } = run;
  const a = await ask(run.human!, s, question);
  if (a.kind === "stop") return stopped(s, question, a);
  // Going on after a pause in a CODE step: run it again by replay.
  if (a.kind === "interrupt" && maybeStep?.type === "CODE" && maybeStep.status === "pending")
    return { kind: "run_code", step: maybeStep };
  // An interrupt, or a question about no step (asked again on resume): go on from the last perception.
  if (a.kind === "interrupt" || !maybeStep) return afterPause(run);
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
      ctx.log.finishStep(s, step, "completed");
      return decideAfter(
        a.choice === "answer"
          ? `The human answered your question "${step.question}": ${a.text}`
          : `The human did not answer "${step.question}": go on with the most reasonable assumption, and say which.`,
        "clarification",
      );
    case "tool_failure":
      if (a.choice === "retry" || a.choice === "edit_code") {
        const code = a.choice === "edit_code" ? a.code : (step.code ?? "");
        const retry = ctx.log.beginStep(s, { ...stepDecision(step), code, description: step.description });
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
      ctx.log.finishStep(s, step, "skipped");
      return decideAfter(
        `The human chose to skip step ${step.plan_step} ("${step.description}"). Go on without it.`,
        "human_edit",
      );
    default:
      throw new Error(`the loop asked a ${question.kind} question and got a ${a.kind} answer`);
  }
}

/** Going on after a pause at an interrupt: decide again from the last perception (or start over). */
function afterPause(run: Run): Next {
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

/**
 * A question asked inside a CODE step got a stop answer: a pause keeps the step pending (resume runs it again by
 * replay); an abort or a failure ends it failed, and the session with it.
 */
export function stepHalted(ctx: LoopContext, run: Run, step: Step, halt: StepHalt): Next {
  if (halt.answer.outcome !== "defer") {
    step.error = { code: "STOPPED", message: `${questionText(halt.question)}: ${halt.answer.reason}` };
    ctx.log.finishStep(run.s, step, "failed");
  }
  if (halt.via && halt.answer.outcome === "defer") {
    run.s.waiting_on = { ...halt.via, step_index: step.index };
    return pause(
      run.s,
      halt.question,
      `${halt.via.agent} (session ${halt.via.session_id}) waits: ${halt.answer.reason}`,
    );
  }
  return stopped(run.s, halt.question, halt.answer);
}

/** A stop answer: `defer` pauses the session on its question, abort and fail end it with a partial answer. */
function stopped(s: AgentSession, question: Question, a: StopAnswer): Next {
  if (a.outcome === "defer") return pause(s, question, a.reason);
  return end(s, STOP_STATUS[a.outcome], partialAnswer(s), `${a.outcome} by ${a.answered_by}: ${a.reason}`);
}

/** Stop here with the question kept, so `pda resume` can ask it again, even after a restart. */
function pause(s: AgentSession, question: Question, reason: string): Next {
  s.pending_human = question as Record<string, unknown>;
  s.pending_question = questionText(question);
  return end(s, "awaiting_human", null, reason);
}
