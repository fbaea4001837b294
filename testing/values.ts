/** Valid model values for tests: a perception snapshot and decisions of each step type. */
import type { DecisionOutput, PerceptionSnapshot } from "../core/index.js";

export function samplePerception(over: Partial<PerceptionSnapshot> = {}): PerceptionSnapshot {
  return {
    entities: ["32", "5", "3", "2"],
    result_requirement: "the value of 32 + 5 - 3 * 2",
    original_goal_achieved: false,
    reasoning: "nothing computed yet",
    local_goal_achieved: false,
    local_reasoning: "no step run yet",
    last_tooluse_summary: "none",
    solution_summary: "not ready yet",
    confidence: 0.9,
    ...over,
  };
}

export function sampleDecision(over: Partial<DecisionOutput> = {}): DecisionOutput {
  return {
    plan_text: ["Step 0: compute 3 * 2, then 32 + 5 - that", "Step 1: conclude"],
    step_index: 0,
    description: "compute with the math tools",
    type: "CODE",
    code: "const p = await multiply(3, 2);\nreturn await subtract(await add(32, 5), p);",
    ...over,
  };
}
