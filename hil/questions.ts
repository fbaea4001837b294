/**
 * What the agent asks a person and what comes back: one zod schema per shape, discriminated on `kind`.
 * Questions are plain JSON so a session paused on one can store it and ask it again after a restart.
 */
import { z } from "zod";
import { ElicitRequestFormParamsSchema } from "@modelcontextprotocol/core";
import { StepError, type HumanInput } from "../core/index.js";

// ---------- questions ----------

/** A CODE step failed after its automatic retries: what should happen to it? */
export const ToolFailureQuestion = z.object({
  kind: z.literal("tool_failure"),
  step_index: z.number().int().min(0),
  description: z.string(),
  code: z.string(),
  error: StepError,
  /** Attempts already made on this step, shown to the person. */
  attempts: z.number().int().min(0).optional(),
});
export type ToolFailureQuestion = z.infer<typeof ToolFailureQuestion>;

/** A NOP step: the plan needs a fact or a preference only a person has. */
export const ClarificationQuestion = z.object({
  kind: z.literal("clarification"),
  question: z.string().min(1),
  step_index: z.number().int().min(0).optional(),
  /** The user's original query, shown for context. */
  context: z.string().optional(),
});
export type ClarificationQuestion = z.infer<typeof ClarificationQuestion>;

/** Before calling a tool marked needs_approval in the hub config. */
export const ApprovalQuestion = z.object({
  kind: z.literal("approval"),
  tool: z.string().min(1),
  server: z.string().optional(),
  args: z.record(z.string(), z.unknown()),
  step_index: z.number().int().min(0).optional(),
});
export type ApprovalQuestion = z.infer<typeof ApprovalQuestion>;

/** The flat object of primitive fields an MCP `elicitation/create` (form mode) asks for, per the MCP spec. */
export const RequestedSchema = ElicitRequestFormParamsSchema.shape.requestedSchema;
export type RequestedSchema = z.infer<typeof RequestedSchema>;

/** An MCP server's `elicitation/create` request, as the hub receives it. */
export const ElicitationQuestion = z.object({
  kind: z.literal("elicitation"),
  server: z.string().min(1),
  message: z.string(),
  requestedSchema: RequestedSchema,
  step_index: z.number().int().min(0).optional(),
});
export type ElicitationQuestion = z.infer<typeof ElicitationQuestion>;

/** Ctrl-C cancelled a model or tool call in flight: go on (make the call again), pause, or abort? */
export const InterruptQuestion = z.object({
  kind: z.literal("interrupt"),
  /** What was cancelled, e.g. "the decision model call" or "step 2's code". */
  what: z.string(),
  step_index: z.number().int().min(0).optional(),
});
export type InterruptQuestion = z.infer<typeof InterruptQuestion>;

/**
 * A resumed step reached a call its earlier run sent but never saw end (the process died with it in flight),
 * of a tool not known to be safe to repeat: did it happen? Make it again, give the result it had, or skip it.
 */
export const InDoubtQuestion = z.object({
  kind: z.literal("in_doubt"),
  tool: z.string().min(1),
  server: z.string().optional(),
  args: z.record(z.string(), z.unknown()),
  step_index: z.number().int().min(0).optional(),
  /**
   * It did happen: it ended before the restart, but the store did not keep its result whole (over 1 MB, or a
   * secret it redacted), so the code cannot be handed it again.
   */
  happened: z.literal(true).optional(),
});
export type InDoubtQuestion = z.infer<typeof InDoubtQuestion>;

export const Question = z.discriminatedUnion("kind", [
  ToolFailureQuestion,
  ClarificationQuestion,
  ApprovalQuestion,
  ElicitationQuestion,
  InterruptQuestion,
  InDoubtQuestion,
]);
export type Question = z.infer<typeof Question>;
export type QuestionKind = Question["kind"];
export const QUESTION_KINDS = [
  "tool_failure",
  "clarification",
  "approval",
  "elicitation",
  "interrupt",
  "in_doubt",
] as const;
export const QuestionKind = z.enum(QUESTION_KINDS);

// ---------- answers ----------

/** Who answered: the person at the terminal, a scripted file, or a named policy (timeouts answer by policy). */
export const AnsweredBy = z
  .string()
  .regex(/^(terminal|scripted|ui|policy:[a-z_]+)$/, "terminal | scripted | ui | policy:<name>");

const common = {
  answered_by: AnsweredBy,
  /** ISO time of the answer. */
  at: z.string(),
  /** Why a policy answered (e.g. "no answer within 30s"), for the log. */
  note: z.string().optional(),
};

/**
 * The tool_failure menu's "abort" is not here: it comes back as a StopAnswer (outcome abort), the one shape
 * every way of ending or pausing a session takes.
 */
export const ToolFailureAnswer = z.discriminatedUnion("choice", [
  z.object({ kind: z.literal("tool_failure"), choice: z.literal("retry"), ...common }),
  z.object({
    kind: z.literal("tool_failure"),
    choice: z.literal("edit_code"),
    code: z.string().min(1),
    ...common,
  }),
  /** `value` is the step's result as the person gave it: parsed JSON when it parses, else the text. */
  z.object({
    kind: z.literal("tool_failure"),
    choice: z.literal("give_result"),
    value: z.unknown(),
    ...common,
  }),
  z.object({ kind: z.literal("tool_failure"), choice: z.literal("skip"), ...common }),
]);
export type ToolFailureAnswer = z.infer<typeof ToolFailureAnswer>;

export const ClarificationAnswer = z.discriminatedUnion("choice", [
  z.object({
    kind: z.literal("clarification"),
    choice: z.literal("answer"),
    text: z.string().min(1),
    ...common,
  }),
  z.object({ kind: z.literal("clarification"), choice: z.literal("no_answer"), ...common }),
]);
export type ClarificationAnswer = z.infer<typeof ClarificationAnswer>;

export const ApprovalChoice = z.enum(["allow_once", "allow_always", "deny"]);
export type ApprovalChoice = z.infer<typeof ApprovalChoice>;
export const ApprovalAnswer = z.object({ kind: z.literal("approval"), choice: ApprovalChoice, ...common });
export type ApprovalAnswer = z.infer<typeof ApprovalAnswer>;

/** Values an elicitation form may hold (MCP: string, number, boolean, or a list of strings for multi-select). */
export const ElicitValue = z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]);
export type ElicitValue = z.infer<typeof ElicitValue>;

/** Shaped like MCP's ElicitResult so the hub can hand it back to the server (see toElicitResult). */
export const ElicitationAnswer = z.discriminatedUnion("action", [
  z.object({
    kind: z.literal("elicitation"),
    action: z.literal("accept"),
    content: z.record(z.string(), ElicitValue),
    ...common,
  }),
  z.object({ kind: z.literal("elicitation"), action: z.literal("decline"), ...common }),
  z.object({ kind: z.literal("elicitation"), action: z.literal("cancel"), ...common }),
]);
export type ElicitationAnswer = z.infer<typeof ElicitationAnswer>;

/** Go on after an interrupt; pausing and aborting are StopAnswers (defer, abort). */
export const InterruptAnswer = z.object({
  kind: z.literal("interrupt"),
  choice: z.literal("continue"),
  ...common,
});
export type InterruptAnswer = z.infer<typeof InterruptAnswer>;

/**
 * `repeat`: make the call again; `give_result`: it happened and returned `value`; `skip`: the code gets a ToolError
 * IN_DOUBT; `fail_step`: the step fails with IN_DOUBT (what policies answer: never repeat unattended).
 */
export const InDoubtAnswer = z.discriminatedUnion("choice", [
  z.object({ kind: z.literal("in_doubt"), choice: z.literal("repeat"), ...common }),
  z.object({ kind: z.literal("in_doubt"), choice: z.literal("give_result"), value: z.unknown(), ...common }),
  z.object({ kind: z.literal("in_doubt"), choice: z.literal("skip"), ...common }),
  z.object({ kind: z.literal("in_doubt"), choice: z.literal("fail_step"), ...common }),
]);
export type InDoubtAnswer = z.infer<typeof InDoubtAnswer>;

export const StopOutcome = z.enum(["abort", "fail", "defer"]);
export type StopOutcome = z.infer<typeof StopOutcome>;

/**
 * The answer that ends or pauses the session instead of answering the question: `abort` (the person chose
 * it, or policy:abort), `fail` (policy:fail — nobody can answer), `defer` (policy:defer — keep the question
 * and pause). Never returned for an elicitation, which is inside a tool call and gets `cancel` instead.
 */
export const StopAnswer = z.object({
  kind: z.literal("stop"),
  question_kind: QuestionKind,
  outcome: StopOutcome,
  reason: z.string(),
  ...common,
});
export type StopAnswer = z.infer<typeof StopAnswer>;

/** The session status a StopAnswer puts the session in. */
export const STOP_STATUS = {
  abort: "aborted",
  fail: "failed",
  defer: "awaiting_human",
} as const satisfies Record<StopOutcome, "aborted" | "failed" | "awaiting_human">;

export const Answer = z.discriminatedUnion("kind", [
  ToolFailureAnswer,
  ClarificationAnswer,
  ApprovalAnswer,
  ElicitationAnswer,
  InterruptAnswer,
  InDoubtAnswer,
  StopAnswer,
]);
export type Answer = z.infer<typeof Answer>;

/** The answers a question of kind K can get. */
export type AnswerOf<K extends QuestionKind> = K extends "tool_failure"
  ? ToolFailureAnswer | StopAnswer
  : K extends "clarification"
    ? ClarificationAnswer | StopAnswer
    : K extends "approval"
      ? ApprovalAnswer | StopAnswer
      : K extends "interrupt"
        ? InterruptAnswer | StopAnswer
        : K extends "in_doubt"
          ? InDoubtAnswer | StopAnswer
          : ElicitationAnswer;

/** Validate an answer against the question it answers; a channel calls this before returning. */
export function checkAnswer<Q extends Question>(q: Q, a: unknown): AnswerOf<Q["kind"]> {
  const parsed = Answer.parse(a);
  const kind = parsed.kind === "stop" ? parsed.question_kind : parsed.kind;
  if (kind !== q.kind || (parsed.kind === "stop" && q.kind === "elicitation")) {
    throw new Error(`hil: a ${q.kind} question got a ${parsed.kind} answer`);
  }
  return parsed as AnswerOf<Q["kind"]>;
}

// ---------- helpers for the loop ----------

/** What a person typed as "the result": JSON when it parses (31, {"a":1}, "x"), else the text itself. */
export function parseGivenValue(text: string): unknown {
  const t = text.trim();
  try {
    return JSON.parse(t);
  } catch {
    return t;
  }
}

/** One line saying what was asked, for logs and HumanInput.question. */
export function questionText(q: Question): string {
  switch (q.kind) {
    case "tool_failure":
      return `step ${q.step_index} (${q.description}) failed: ${q.error.code}${q.error.tool ? ` in ${q.error.tool}` : ""}: ${q.error.message}`;
    case "clarification":
      return q.question;
    case "approval":
      return `allow ${q.server ? `${q.server}.` : ""}${q.tool}(${JSON.stringify(q.args)})?`;
    case "elicitation":
      return `${q.server} asks: ${q.message}`;
    case "interrupt":
      return `interrupted (Ctrl-C) during ${q.what}: continue, pause or abort?`;
    case "in_doubt": {
      const call = `${q.server ? `${q.server}.` : ""}${q.tool}(${JSON.stringify(q.args)})`;
      return q.happened
        ? `${call} happened before the process ended, but its result was not kept: repeat it, give its result, or skip it?`
        : `${call} was sent before the process ended and may have happened: repeat it, give its result, or skip it?`;
    }
  }
}

/** One line saying what was answered, for logs and HumanInput.answer. */
export function answerText(a: Answer): string {
  switch (a.kind) {
    case "tool_failure":
      if (a.choice === "edit_code") return `edit_code: ${a.code}`;
      if (a.choice === "give_result") return `give_result: ${JSON.stringify(a.value)}`;
      return a.choice;
    case "clarification":
      return a.choice === "answer" ? a.text : "no_answer";
    case "approval":
      return a.choice;
    case "elicitation":
      return a.action === "accept" ? `accept: ${JSON.stringify(a.content)}` : a.action;
    case "interrupt":
      return a.choice;
    case "in_doubt":
      return a.choice === "give_result" ? `give_result: ${JSON.stringify(a.value)}` : a.choice;
    case "stop":
      return `${a.outcome}: ${a.reason}`;
  }
}

/** The record kept beside the original query (AgentSession.state.human_inputs) and logged to memory. */
export function toHumanInput(q: Question, a: Answer): HumanInput {
  return {
    kind: q.kind,
    question: questionText(q),
    answer: answerText(a),
    answered_by: a.answered_by,
    at: a.at,
    ...(q.step_index !== undefined ? { step_index: q.step_index } : {}),
  };
}

/** The MCP `ElicitResult` for an elicitation answer. */
export function toElicitResult(a: ElicitationAnswer): {
  action: "accept" | "decline" | "cancel";
  content?: Record<string, ElicitValue>;
} {
  return a.action === "accept" ? { action: "accept", content: a.content } : { action: a.action };
}
