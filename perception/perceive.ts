/** Turns raw input (a query, or a step's result) into a PerceptionSnapshot by asking the model. */
import {
  PerceptionSnapshot,
  type HumanInput,
  type PlanVersion,
  type Step,
  type GenerateResult,
  type ModelProvider,
} from "../core/index.js";
import { truncateForPrompt } from "../heuristics/index.js";
import { renderCode, renderHistory, renderHumanInputs, renderPlan, renderPrompt } from "../prompts/index.js";

export interface PerceptionInput {
  mode: "user_query" | "step_result";
  query: string;
  humanInputs: HumanInput[];
  /** Memory hits, already rendered ("" when none). */
  memory: string;
  /** Query-guard findings, already rendered ("" when none). */
  queryFindings?: string;
  plan?: PlanVersion;
  history?: Step[];
  /** The step just run (step_result mode). */
  step?: Step;
  signal?: AbortSignal;
}

export interface PerceptionOutput {
  snapshot: PerceptionSnapshot;
  result: GenerateResult<PerceptionSnapshot>;
  prompt: string;
}

export function perceptionPrompt(input: PerceptionInput): { system: string; prompt: string } {
  const system = renderPrompt("perception/system", {});
  const human = renderHumanInputs(input.humanInputs);
  if (input.mode === "user_query") {
    const prompt = renderPrompt("perception/user_query", {
      query: input.query,
      query_findings: input.queryFindings ?? "",
      human_inputs: human,
      memory: input.memory,
    });
    return { system, prompt };
  }
  const step = input.step;
  if (!step) throw new Error("perceive: step_result mode needs the step");
  const r = step.execution_result;
  const result = !r
    ? "(no result)"
    : r.ok
      ? `ok: ${truncateForPrompt(r.value, 4000)}${r.logs.length ? `\nconsole: ${truncateForPrompt(r.logs.join("\n"), 1000)}` : ""}`
      : `FAILED ${r.error?.code}: ${truncateForPrompt(r.error?.message ?? "", 2000)}${r.logs.length ? `\nconsole: ${truncateForPrompt(r.logs.join("\n"), 1000)}` : ""}`;
  const prompt = renderPrompt("perception/step_result", {
    query: input.query,
    human_inputs: human,
    plan_version: String(input.plan?.version ?? 0),
    plan: renderPlan(input.plan),
    history: renderHistory((input.history ?? []).filter((s) => s !== step)),
    step_description: step.description,
    step_code: renderCode(step.code),
    step_result: result,
    memory: input.memory,
  });
  return { system, prompt };
}

export async function perceive(model: ModelProvider, input: PerceptionInput): Promise<PerceptionOutput> {
  const { system, prompt } = perceptionPrompt(input);
  const result = await model.generate({
    role: "perception",
    system,
    prompt,
    schema: PerceptionSnapshot,
    schemaName: "PerceptionSnapshot",
    signal: input.signal,
  });
  return { snapshot: result.value, result, prompt: `${system}\n${prompt}` };
}
