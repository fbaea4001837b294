/**
 * The decision split in two, MALMM-style: a planner writes plan_text and chooses the step (with a brief for
 * CODE steps), a coder writes that step's JavaScript. The loop sees one DecisionOutput; the log keeps each call
 * as its own row ("planner", then "coder"), and each is checked against the budgets before it is made.
 */
import { z } from "zod";
import { DecisionOutput, StepType, type GenerateRequest, type ModelProvider } from "../../core/index.js";
import { decisionPrompt, renderTools, type DecisionInput, type DecisionPhase } from "../../decision/index.js";
import { renderHistory, renderPlan } from "../../perception/index.js";
import { renderPrompt, withSection } from "../../prompts/index.js";

export const PlannerOutput = z
  .object({
    plan_text: z.array(z.string()).min(1).describe("The plan, one line per step, e.g. 'Step 0: ...'"),
    step_index: z.number().int().min(0).describe("Index into plan_text of the step to take now"),
    description: z.string().describe("What this step does"),
    type: StepType.describe("CODE to run tools, CONCLUDE to answer, NOP to ask the human"),
    brief: z.string().optional().describe("CODE: what the coder's code must do and return"),
    conclusion: z.string().optional().describe("CONCLUDE: the final answer"),
    question: z.string().optional().describe("NOP: the question for the human"),
  })
  .superRefine((d, ctx) => {
    const need = { CODE: "brief", CONCLUDE: "conclusion", NOP: "question" } as const;
    const field = need[d.type];
    if (!d[field]?.trim())
      ctx.addIssue({
        code: "custom",
        path: [field],
        message: `a ${d.type} step needs a non-empty "${field}"`,
      });
    if (d.step_index >= d.plan_text.length)
      ctx.addIssue({
        code: "custom",
        path: ["step_index"],
        message: `step_index ${d.step_index} is past the end of plan_text (${d.plan_text.length} lines)`,
      });
  });
export type PlannerOutput = z.infer<typeof PlannerOutput>;

export const CoderOutput = z.object({
  code: z.string().min(1).describe("The step's JavaScript; 'return' its result"),
});

export interface PlannerCoderModels {
  planner: ModelProvider;
  coder: ModelProvider;
}

function plannerRequest(input: DecisionInput, section: string): GenerateRequest<PlannerOutput> {
  const system = renderPrompt("agents/planner", {
    tools: renderTools(input.tools, input.unavailable),
    tool_stats: input.toolStats,
  });
  return {
    role: "planner",
    // The request, perception, plan and history as the single decision sees them.
    ...withSection({ system, prompt: decisionPrompt(input).prompt }, section),
    schema: PlannerOutput,
    schemaName: "PlannerOutput",
    signal: input.signal,
  };
}

function coderRequest(
  input: DecisionInput,
  plan: PlannerOutput,
  section: string,
): GenerateRequest<z.infer<typeof CoderOutput>> {
  const system = renderPrompt("agents/coder", { tools: renderTools(input.tools, input.unavailable) });
  const prompt = renderPrompt("agents/coder_step", {
    query: input.query,
    plan: renderPlan({
      version: 1,
      plan_text: plan.plan_text,
      steps: [],
      reason: "initial",
      triggered_by: "",
      created_at: "",
    }),
    history: renderHistory(input.history ?? []),
    step_index: String(plan.step_index),
    description: plan.description,
    brief: plan.brief ?? "",
    guidance: input.guidance ? `Feedback on the last attempt: ${input.guidance}` : "",
  });
  return {
    role: "coder",
    ...withSection({ system, prompt }, section),
    schema: CoderOutput,
    schemaName: "CoderOutput",
    signal: input.signal,
  };
}

/** `section`: the agent's own system text (role, callable agents), shown to both planner and coder. */
export function plannerCoderPhase(models: PlannerCoderModels, section = ""): DecisionPhase {
  return async (input, call) => {
    const planned = await call(plannerRequest(input, section), models.planner);
    const plan: Partial<PlannerOutput> = { ...planned };
    delete plan.brief;
    if (plan.type !== "CODE") return DecisionOutput.parse(plan);
    const coded = await call(coderRequest(input, planned, section), models.coder);
    return DecisionOutput.parse({ ...plan, code: coded.code });
  };
}
