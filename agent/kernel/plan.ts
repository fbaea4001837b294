/** Plan versions and steps as plain data: what the loop records when the model decides. */
import type { AgentSession, DecisionOutput, PlanReason, PlanVersion, Step } from "../../core/index.js";
import { attemptsOf } from "./budgets.js";
import { currentPlan } from "./session.js";

/** A step as the decision describes it (a retry is begun from the step it retries). */
export type StepDecision = Omit<DecisionOutput, "plan_text">;

/**
 * The plan version a decision makes, or undefined when its plan text is the current one's: moving to the next
 * step of the same plan is not a new version.
 */
export function nextPlanVersion(
  s: AgentSession,
  d: DecisionOutput,
  reason: PlanReason,
  trigger: string,
  at: string,
): PlanVersion | undefined {
  const cur = currentPlan(s);
  if (cur && sameLines(cur.plan_text, d.plan_text)) return undefined;
  return {
    version: (cur?.version ?? 0) + 1,
    plan_text: d.plan_text,
    steps: [],
    reason: cur ? reason : "initial",
    triggered_by: trigger,
    created_at: at,
  };
}

/** The next step of the session, under the current plan version; CODE attempts count per plan step. */
export function newStep(s: AgentSession, d: StepDecision): Step {
  return {
    index: s.steps.length,
    plan_step: d.step_index,
    description: d.description,
    type: d.type,
    code: d.type === "CODE" ? d.code : undefined,
    conclusion: d.type === "CONCLUDE" ? d.conclusion : undefined,
    question: d.type === "NOP" ? d.question : undefined,
    status: "pending",
    attempts: d.type === "CODE" ? attemptsOf(s, d.step_index) + 1 : 1,
    plan_version: currentPlan(s)!.version,
  };
}

/** The decision a step was taken from, to begin a retry of it. */
export function stepDecision(step: Step): StepDecision {
  return {
    step_index: step.plan_step ?? 0,
    description: step.description,
    type: step.type,
    code: step.code,
    conclusion: step.conclusion,
    question: step.question,
  };
}

/** The best answer a stopped session has: perception's summary if it had one, else the last good result. */
export function partialAnswer(s: AgentSession): string | null {
  if (s.state.solution_summary && s.state.solution_summary !== "not ready yet")
    return s.state.solution_summary;
  const good = [...s.steps].reverse().find((st) => st.execution_result?.ok);
  return good ? JSON.stringify(good.execution_result!.value) : null;
}

function sameLines(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((line, i) => line.trim() === b[i]!.trim());
}
