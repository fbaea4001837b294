/**
 * The decision phase: a snapshot and the history → the plan and its next step. The prompt is built here (the
 * tools by tools.ts, the loop's state as perception renders it); the call is made through the loop's ModelCall.
 */
import {
  DecisionOutput,
  type DownServer,
  type GenerateRequest,
  type HumanInput,
  type Phase,
  type PerceptionSnapshot,
  type PlanVersion,
  type Step,
  type ToolInfo,
} from "../core/index.js";
import { renderHistory, renderHumanInputs, renderPlan } from "../perception/index.js";
import { renderPrompt, withSection, type PromptText } from "../prompts/index.js";
import { renderTools } from "./tools.js";

export interface DecisionInput {
  mode: "initial" | "mid_session";
  query: string;
  snapshot: PerceptionSnapshot;
  humanInputs: HumanInput[];
  tools: ToolInfo[];
  /** Servers that are down now, named apart from the tools (renderTools). */
  unavailable?: DownServer[];
  /** Most and least reliable tools, already rendered ("" when none). */
  toolStats: string;
  memory: string;
  plan?: PlanVersion;
  history?: Step[];
  /** Feedback for this round, e.g. why the last step failed or what a code guard found. */
  guidance?: string;
  signal?: AbortSignal;
}

function renderSnapshot(s: PerceptionSnapshot): string {
  return [
    `- entities: ${s.entities.join(", ") || "(none)"}`,
    `- result requirement: ${s.result_requirement}`,
    `- original goal achieved: ${s.original_goal_achieved} (${s.reasoning})`,
    `- last step achieved its goal: ${s.local_goal_achieved} (${s.local_reasoning})`,
    `- last tool use: ${s.last_tooluse_summary}`,
    `- solution so far: ${s.solution_summary}`,
  ].join("\n");
}

export function decisionPrompt(input: DecisionInput): PromptText {
  const system = renderPrompt("decision/system", {
    tools: renderTools(input.tools, input.unavailable),
    tool_stats: input.toolStats,
  });
  const common = {
    query: input.query,
    human_inputs: renderHumanInputs(input.humanInputs),
    perception: renderSnapshot(input.snapshot),
    memory: input.memory,
  };
  if (input.mode === "initial") {
    return {
      system,
      prompt: renderPrompt("decision/initial", { ...common, guidance: input.guidance ?? "" }),
    };
  }
  const prompt = renderPrompt("decision/mid_session", {
    ...common,
    plan_version: String(input.plan?.version ?? 0),
    plan: renderPlan(input.plan),
    history: renderHistory(input.history ?? []),
    guidance: input.guidance ?? "Give the next step: keep the plan if it still holds, or revise it.",
  });
  return { system, prompt };
}

/** The decision call as plain data; `section` is an agent's own system text ("" for none). */
export function decisionRequest(input: DecisionInput, section = ""): GenerateRequest<DecisionOutput> {
  return {
    role: "decision",
    ...withSection(decisionPrompt(input), section),
    schema: DecisionOutput,
    schemaName: "DecisionOutput",
    signal: input.signal,
  };
}

export type DecisionPhase = Phase<DecisionInput, DecisionOutput>;

/** The decision phase, with an agent's own system text added (`section`, "" for a plain session). */
export function decisionPhase(section = ""): DecisionPhase {
  return (input, call) => call(decisionRequest(input, section));
}
