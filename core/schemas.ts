/**
 * The data model of pda: one zod schema per shape, types derived with z.infer, JSON Schema for the model
 * derived with z.toJSONSchema. Field names are the snake_case names of the system pda grew from, so its
 * prompts, logs and reports stay comparable.
 */
import { z } from "zod";

/** What perception says about the situation: the model fills it from a query or a step's result. */
export const PerceptionSnapshot = z.object({
  entities: z.array(z.string()).describe("Key entities, numbers and names found in the input"),
  result_requirement: z.string().describe("What the final answer must contain"),
  original_goal_achieved: z.boolean().describe("True only if the user's original question is fully answered"),
  reasoning: z.string().describe("Why original_goal_achieved is true or false"),
  local_goal_achieved: z.boolean().describe("True if the last step did what it was meant to do"),
  local_reasoning: z.string().describe("Why local_goal_achieved is true or false"),
  last_tooluse_summary: z.string().describe("One line on the last tool use, or 'none'"),
  solution_summary: z.string().describe("The answer so far, or 'not ready yet'"),
  confidence: z.number().min(0).max(1).describe("Confidence in this judgement, 0..1"),
  human_input: z.string().optional().describe("A human's answer, if one was given"),
});
export type PerceptionSnapshot = z.infer<typeof PerceptionSnapshot>;

export const StepType = z.enum(["CODE", "CONCLUDE", "NOP"]);
export type StepType = z.infer<typeof StepType>;

/**
 * What decision returns: the whole plan as text and the next step to take. The model-facing schema keeps
 * every field flat and required-by-type so it works with JSON mode on every provider; the refinement ties
 * each step type to the field it needs.
 */
export const DecisionOutput = z
  .object({
    plan_text: z.array(z.string()).min(1).describe("The plan, one line per step, e.g. 'Step 0: ...'"),
    step_index: z.number().int().min(0).describe("Index into plan_text of the step to take now"),
    description: z.string().describe("What this step does"),
    type: StepType.describe("CODE to run tools, CONCLUDE to answer, NOP to ask the human"),
    code: z.string().optional().describe("CODE: JavaScript using the tools; 'return' the step's result"),
    conclusion: z.string().optional().describe("CONCLUDE: the final answer"),
    question: z.string().optional().describe("NOP: the question for the human"),
  })
  .superRefine((d, ctx) => {
    const need = { CODE: "code", CONCLUDE: "conclusion", NOP: "question" } as const;
    const field = need[d.type];
    if (!d[field] || !d[field]!.trim()) {
      ctx.addIssue({
        code: "custom",
        path: [field],
        message: `a ${d.type} step needs a non-empty "${field}"`,
      });
    }
    if (d.step_index >= d.plan_text.length) {
      ctx.addIssue({
        code: "custom",
        path: ["step_index"],
        message: `step_index ${d.step_index} is past the end of plan_text (${d.plan_text.length} lines)`,
      });
    }
  });
export type DecisionOutput = z.infer<typeof DecisionOutput>;

export const StepStatus = z.enum(["pending", "completed", "failed", "skipped", "clarification_needed"]);
export type StepStatus = z.infer<typeof StepStatus>;

/** A typed failure of a step, a tool call or a sandbox run. */
export const StepError = z.object({
  code: z.string(),
  message: z.string(),
  tool: z.string().optional(),
  line: z.number().int().optional(),
  column: z.number().int().optional(),
});
export type StepError = z.infer<typeof StepError>;

/** One tool call as the hub measured it. */
/**
 * How a call of a CODE step got its outcome: `sent` (logged before it left, no outcome yet: in flight, or in
 * doubt once its process is gone), `done` (the server answered, or the call failed on its way), `replayed`
 * (a resumed step got the logged outcome without reaching the server), `in_doubt` (sent by a process that died
 * before logging an outcome: it may or may not have happened).
 */
export const ToolCallState = z.enum(["sent", "done", "replayed", "in_doubt"]);
export type ToolCallState = z.infer<typeof ToolCallState>;

export const ToolCallRecord = z.object({
  server: z.string(),
  tool: z.string(),
  ok: z.boolean(),
  error_kind: z.string().optional(),
  error_message: z.string().optional(),
  latency_ms: z.number(),
  bytes: z.number().int().nonnegative(),
  started_at: z.string(),
  // The durable-step log (agent/kernel/journal.ts); absent for calls made outside a CODE step.
  /** Position of the call in its step, in the order the code made its calls. */
  seq: z.number().int().min(0).optional(),
  state: ToolCallState.optional(),
  /** sha256 (hex) of the arguments as sent, for matching a replayed call against the log. */
  args_sha: z.string().optional(),
  args_json: z.string().optional(),
  /** The value the call returned, as JSON, so a resumed step can be given it again. */
  result_json: z.string().optional(),
  /** The clock readings the code took before it made the call (CallOptions.clock), as a JSON array. */
  clock_json: z.string().optional(),
  /** Who decided what to do with a call in doubt: `safe_to_repeat`, a person's answer, or a policy. */
  decided_by: z.string().optional(),
  /**
   * A replayed call that is the logged call at its position, outcome and all: a store may keep it as a
   * reference to the logged row rather than a copy (memory's replayed_runs). Reads give it back as a row.
   */
  copies_logged: z.boolean().optional(),
});
export type ToolCallRecord = z.infer<typeof ToolCallRecord>;

/** What running a CODE step produced. `value` is JSON (the sandbox makes non-JSON values explicit). */
export const ExecutionResult = z.object({
  ok: z.boolean(),
  value: z.unknown().optional(),
  logs: z.array(z.string()),
  error: StepError.optional(),
  tool_calls: z.array(ToolCallRecord),
  duration_ms: z.number(),
});
export type ExecutionResult = z.infer<typeof ExecutionResult>;

export const HumanInput = z.object({
  kind: z.string().describe("tool_failure | clarification | approval | elicitation"),
  question: z.string(),
  answer: z.string(),
  answered_by: z.string().describe("terminal | scripted | policy:<name>"),
  at: z.string(),
  step_index: z.number().int().optional(),
});
export type HumanInput = z.infer<typeof HumanInput>;

export const Step = z.object({
  /** Position in AgentSession.steps (one entry per executed step, retries included). */
  index: z.number().int().min(0),
  /** The step_index in the plan this step carries out (a retry has the same plan_step). */
  plan_step: z.number().int().min(0).optional(),
  description: z.string(),
  type: StepType,
  code: z.string().optional(),
  conclusion: z.string().optional(),
  question: z.string().optional(),
  status: StepStatus,
  attempts: z.number().int().min(0),
  execution_result: ExecutionResult.optional(),
  error: StepError.optional(),
  perception: PerceptionSnapshot.optional(),
  human_input: z.string().optional(),
  plan_version: z.number().int().min(1),
  /**
   * A CODE step's sandbox `Math.random` seed, set before its first run, so a step resumed by replaying its tool
   * calls takes the same path (its `Date` readings are logged with its calls: CallOptions.clock).
   */
  replay_seed: z.number().int().optional(),
});
export type Step = z.infer<typeof Step>;

export const PlanReason = z.enum([
  "initial",
  "next_step",
  "replan_after_failure",
  "clarification",
  "human_edit",
]);
export type PlanReason = z.infer<typeof PlanReason>;

export const PlanVersion = z.object({
  version: z.number().int().min(1),
  plan_text: z.array(z.string()),
  /** Indices into AgentSession.steps of the steps taken under this version. */
  steps: z.array(z.number().int().min(0)),
  reason: PlanReason,
  /** What caused it: "snapshot:<n>" or "step:<n>". */
  triggered_by: z.string(),
  created_at: z.string(),
});
export type PlanVersion = z.infer<typeof PlanVersion>;

export const SnapshotType = z.enum(["user_query", "step_result", "human_input"]);
export type SnapshotType = z.infer<typeof SnapshotType>;

export const SnapshotRecord = z.object({
  index: z.number().int().min(0),
  snapshot_type: SnapshotType,
  snapshot: PerceptionSnapshot,
  step_index: z.number().int().optional(),
  created_at: z.string(),
});
export type SnapshotRecord = z.infer<typeof SnapshotRecord>;

export const SessionStatus = z.enum([
  "running",
  "succeeded",
  "failed",
  "aborted",
  "budget_exhausted",
  "awaiting_human",
]);
export type SessionStatus = z.infer<typeof SessionStatus>;

export const Usage = z.object({
  llm_calls: z.number().int().nonnegative(),
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  tokens: z.number().int().nonnegative(),
  /** Calls that reached a server or were refused; a replayed call (answered from the log) is not one. */
  tool_calls: z.number().int().nonnegative(),
  ms: z.number().nonnegative(),
  /** Money spent on model calls, from the cost table in models.yaml (0 when the model has no price). */
  cost_usd: z.number().nonnegative().default(0),
});
export type Usage = z.infer<typeof Usage>;

export const SessionState = z.object({
  original_goal_achieved: z.boolean(),
  final_answer: z.string().nullable(),
  confidence: z.number().min(0).max(1),
  solution_summary: z.string(),
  human_inputs: z.array(HumanInput),
});
export type SessionState = z.infer<typeof SessionState>;

/**
 * What a sub-agent ends with (its result contract): success, a typed error_code from its agent's enum
 * ("NONE" on success; "UNKNOWN" when it ended without a report), a reason, a result, and any extra fields its
 * contract names.
 */
export const AgentReport = z.looseObject({
  success: z.boolean(),
  error_code: z.string(),
  reason: z.string(),
  result: z.unknown().optional(),
});
export type AgentReport = z.infer<typeof AgentReport>;

/** One call of a sub-agent from a session's CODE (`agents.<name>(...)` or `agents.send(...)`). */
export const AgentCallRecord = z.object({
  agent: z.string(),
  session_id: z.string(),
  via: z.enum(["call", "send"]),
  step_index: z.number().int().optional(),
  success: z.boolean(),
  error_code: z.string(),
  reason: z.string(),
  tool_calls_used: z.number().int().nonnegative(),
  started_at: z.string(),
  duration_ms: z.number().nonnegative(),
  /** agents.send only: the caller stopped waiting (the sub-agent was cancelled). */
  timed_out: z.boolean().optional(),
  /**
   * The caller's step ran again (resumed) and this call got the outcome of the session its earlier run started,
   * which had finished; the caller's process had died before it logged the call.
   */
  replayed: z.boolean().optional(),
  /** What the call spent: the sub-agent's session and, recursively, the sub-agents it called. */
  llm_calls: z.number().int().nonnegative().optional(),
  tokens: z.number().int().nonnegative().optional(),
  cost_usd: z.number().nonnegative().optional(),
});
export type AgentCallRecord = z.infer<typeof AgentCallRecord>;

/** Who held control of a session from which step on (handoffs hand it from one agent to another). */
export const ControlRecord = z.object({
  agent: z.string(),
  /** Index of the first step this agent took (AgentSession.steps.length when it got control). */
  since_step: z.number().int().min(0),
  at: z.string(),
  from: z.string().optional(),
  reason: z.string().optional(),
});
export type ControlRecord = z.infer<typeof ControlRecord>;

export const SESSION_SCHEMA_VERSION = 1;

export const AgentSession = z.object({
  $schemaVersion: z.literal(SESSION_SCHEMA_VERSION),
  session_id: z.string(),
  /** Never overwritten: human answers are kept beside it in state.human_inputs. */
  original_query: z.string(),
  created_at: z.string(),
  snapshots: z.array(SnapshotRecord),
  plan_versions: z.array(PlanVersion),
  steps: z.array(Step),
  state: SessionState,
  usage: Usage,
  status: SessionStatus,
  /** Why the session ended the way it did (budget hit, error), when it is not plain success. */
  status_reason: z.string().optional(),
  /** The question a session in status awaiting_human is waiting on, as text. */
  pending_question: z.string().optional(),
  /** The same question as hil/ typed it (validated there on resume), so `pda resume` can ask it again. */
  pending_human: z.record(z.string(), z.unknown()).optional(),
  /**
   * The question was asked in a sub-agent's session, which paused on it, and this session's step that called
   * the sub-agent paused with it: `pda resume` runs that step again, which resumes the sub-agent, which asks.
   */
  waiting_on: z
    .object({ agent: z.string(), session_id: z.string(), step_index: z.number().int().min(0) })
    .optional(),
  /** Tools a person allowed "for the session" (server.tool): asked no more, also after a resume. */
  approved_tools: z.array(z.string()).optional(),
  parent_session_id: z.string().optional(),
  agent: z.string().optional(),
  /** The profile (profiles.yaml) it ran under: `pda resume` runs it under the same one (its team, limits). */
  profile: z.string().optional(),
  /** A sub-agent's session: the typed report it ended with (absent when it ended without one). */
  report: AgentReport.optional(),
  /** The sub-agents this session's CODE called, in the order they ended. */
  agent_calls: z.array(AgentCallRecord).optional(),
  /** Who held control when, for sessions run by an agent team (a handoff adds an entry). */
  control: z.array(ControlRecord).optional(),
});
export type AgentSession = z.infer<typeof AgentSession>;

/** The `--json` summary of a session (DESIGN.md). */
export const SessionSummary = z.object({
  session_id: z.string(),
  status: SessionStatus,
  final_answer: z.string().nullable(),
  steps: z.number().int(),
  plan_versions: z.number().int(),
  llm_calls: z.number().int(),
  tool_calls: z.number().int(),
  tokens: z.number().int(),
  cost_usd: z.number(),
  duration_ms: z.number(),
  human_inputs: z.number().int(),
  status_reason: z.string().optional(),
  question: z.string().optional(),
  /**
   * What the session spent with every sub-agent under it, when it called any (the figures above are its own):
   * `subagent_calls` is how many sub-agents it called itself.
   */
  with_subagents: z
    .object({
      subagent_calls: z.number().int(),
      llm_calls: z.number().int(),
      tokens: z.number().int(),
      cost_usd: z.number(),
    })
    .optional(),
});
export type SessionSummary = z.infer<typeof SessionSummary>;

const jsonSchemas = new WeakMap<z.ZodType, Record<string, unknown>>();

/**
 * JSON Schema for a model-facing shape: refinements are dropped (they are checked after parsing). Cached per
 * schema (it is derived on every model call); callers must not mutate the result.
 */
export function modelJsonSchema(schema: z.ZodType): Record<string, unknown> {
  let js = jsonSchemas.get(schema);
  if (!js) {
    js = z.toJSONSchema(schema, { target: "draft-7", unrepresentable: "any", io: "input" }) as Record<
      string,
      unknown
    >;
    delete js.$schema;
    jsonSchemas.set(schema, js);
  }
  return js;
}

/** One model call as logged: enough to replay the session from the log. */
export const LlmCallRecord = z.object({
  role: z.string(),
  provider: z.string(),
  model: z.string(),
  ok: z.boolean(),
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  latency_ms: z.number().nonnegative(),
  attempts: z.number().int().min(1),
  cost_usd: z.number().nonnegative().optional(),
  /** The prompt as sent (system + user), for inspection. */
  prompt: z.string(),
  /** The raw text the model returned on the last attempt. */
  raw_response: z.string(),
  /** The validated value, when ok. */
  value: z.unknown().optional(),
  error: z.string().optional(),
  /** Why the model stopped on the last call, verbatim from the provider (RawCompletion in core/model.ts). */
  finish_reason: z.string().optional(),
  started_at: z.string(),
});
export type LlmCallRecord = z.infer<typeof LlmCallRecord>;

/** A message an MCP server logged (notifications/message, or a stderr line with level "stderr"). */
export const ServerLogEntry = z.object({
  server: z.string(),
  level: z.string(),
  logger: z.string().optional(),
  /** The message's data as text (JSON for structured data). */
  message: z.string(),
  at: z.string(),
});
export type ServerLogEntry = z.infer<typeof ServerLogEntry>;
