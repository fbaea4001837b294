/**
 * The perception phase: raw input (a query, or a step's result) → a PerceptionSnapshot. The prompt is built
 * here from the loop's state (context.ts, history.ts); the call is made through the loop's ModelCall.
 */
import {
  PerceptionSnapshot,
  type GenerateRequest,
  type HumanInput,
  type ImagePart,
  type Phase,
  type PlanVersion,
  type Step,
} from "../core/index.js";
import { truncateForPrompt } from "../heuristics/index.js";
import { renderPrompt, withSection, type PromptText } from "../prompts/index.js";
import { renderCode, renderHistory, renderHumanInputs, renderPlan } from "./context.js";
import { takeImages } from "./images.js";

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

/** The prompt's text, and the pictures of the step's result that go with it (images.ts). */
export function perceptionPrompt(input: PerceptionInput): PromptText & { images?: ImagePart[] } {
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
  const { value, images } = r?.ok ? takeImages(r.value) : { value: undefined, images: [] };
  const result = !r
    ? "(no result)"
    : r.ok
      ? `ok: ${truncateForPrompt(value, 4000)}${r.logs.length ? `\nconsole: ${truncateForPrompt(r.logs.join("\n"), 1000)}` : ""}`
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
  return images.length ? { system, prompt, images } : { system, prompt };
}

/** The perception call as plain data; `section` is an agent's own system text ("" for none). */
export function perceptionRequest(input: PerceptionInput, section = ""): GenerateRequest<PerceptionSnapshot> {
  const { images, ...text } = perceptionPrompt(input);
  return {
    role: "perception",
    ...withSection(text, section),
    ...(images && { images }),
    schema: PerceptionSnapshot,
    schemaName: "PerceptionSnapshot",
    signal: input.signal,
  };
}

export type PerceptionPhase = Phase<PerceptionInput, PerceptionSnapshot>;

/** The perception phase, with an agent's own system text added (`section`, "" for a plain session). */
export function perceptionPhase(section = ""): PerceptionPhase {
  return (input, call) => call(perceptionRequest(input, section));
}
