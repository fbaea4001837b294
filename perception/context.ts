/** Renders the loop's state for the perception and decision prompts (plan, steps, human answers, memory hits) into the text the templates embed. */
import type { HumanInput, PlanVersion, Step } from "../core/index.js";
import { boundHistory } from "./history.js";

export function renderPlan(plan: PlanVersion | undefined): string {
  if (!plan) return "(no plan yet)";
  return plan.plan_text.map((line) => `  ${line}`).join("\n");
}

/** Past steps for a prompt: the last few in full, older ones one line each, so the size stays bounded. */
export function renderHistory(steps: Step[]): string {
  if (steps.length === 0) return "(none)";
  return boundHistory(steps).text;
}

export function renderHumanInputs(inputs: HumanInput[]): string {
  if (inputs.length === 0) return "";
  const lines = inputs.map((h) => `- asked (${h.kind}) "${h.question}" → the human answered: ${h.answer}`);
  return `Answers from the human (added beside the request, which stays as it was):\n${lines.join("\n")}\n`;
}

export function renderCode(code: string | undefined): string {
  return code ?? "";
}
