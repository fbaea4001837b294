/** Renders the loop's state (plan, steps, human answers, memory hits) into the text the templates embed. */
import type { HumanInput, PlanVersion, Step } from "../core/index.js";

/** JSON of a value, cut to `max` characters with a note of the full size. */
export function clip(value: unknown, max = 2000): string {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? "undefined");
  if (text.length <= max) return text;
  return `${text.slice(0, max)}… [truncated: ${text.length} characters in full]`;
}

export function renderPlan(plan: PlanVersion | undefined): string {
  if (!plan) return "(no plan yet)";
  return plan.plan_text.map((line) => `  ${line}`).join("\n");
}

/** One line per step: what it did and what came of it. */
export function renderStepLine(step: Step, maxResult = 400): string {
  const r = step.execution_result;
  let outcome = "";
  if (step.type === "CODE" && r) {
    outcome = r.ok
      ? `result ${clip(r.value, maxResult)}`
      : `error ${step.error?.code ?? r.error?.code}: ${clip(r.error?.message ?? "", maxResult)}`;
    if (r.logs.length > 0) outcome += `; logs ${clip(r.logs.join("\n"), maxResult)}`;
  } else if (step.type === "NOP") {
    outcome = `asked "${step.question}"${step.human_input ? `, human answered "${step.human_input}"` : ""}`;
  } else if (step.type === "CONCLUDE") {
    outcome = `concluded ${clip(step.conclusion ?? "", maxResult)}`;
  }
  return `- step ${step.plan_step ?? step.index} (${step.status}, attempt ${step.attempts}): ${step.description} → ${outcome}`;
}

export function renderHistory(steps: Step[], keepLast = 3): string {
  if (steps.length === 0) return "(none)";
  // Older steps get a short line, the last few a longer one: the prompt stays bounded as sessions grow.
  const cut = Math.max(0, steps.length - keepLast);
  return steps.map((s, i) => renderStepLine(s, i < cut ? 120 : 1500)).join("\n");
}

export function renderHumanInputs(inputs: HumanInput[]): string {
  if (inputs.length === 0) return "";
  const lines = inputs.map((h) => `- asked (${h.kind}) "${h.question}" → the human answered: ${h.answer}`);
  return `Answers from the human (added beside the request, which stays as it was):\n${lines.join("\n")}\n`;
}

export function renderCode(code: string | undefined): string {
  return code ?? "";
}
