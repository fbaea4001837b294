/**
 * The batch runner's data: a query read from the input file, the outcome stored per item in the store's
 * batch tables, the state file kept in the output folder, and the exact CSV columns. One schema, one type.
 */
import { z } from "zod";
import { SessionStatus } from "../core/index.js";

/** `test_queries_output.csv`: the original system's columns, then ours; passed-through columns follow. */
export const QUERY_COLUMNS = [
  "Query",
  "Tools Needed",
  "Complexity",
  "Final Plan",
  "Output",
  "Tools Executed",
  "Status",
  "Expected",
  "Correct",
  "Steps",
  "Plan Versions",
  "LLM Calls",
  "Tokens",
  "Duration ms",
  "Human Inputs",
  "Session Id",
  "Sub-agent Calls",
] as const;

/** `tool_performance_status.csv`: the original system's columns, then ours. */
export const TOOL_COLUMNS = [
  "Tool Name",
  "Number of Times Invoked",
  "Success Rate (%)",
  "Server",
  "Failures",
  "Error Kinds",
  "Median ms",
  "P95 ms",
] as const;

export const QUERY_CSV = "test_queries_output.csv";
export const TOOL_CSV = "tool_performance_status.csv";
export const SUMMARY_MD = "summary.md";
export const STATE_FILE = "batch.json";

/** One query of the input file. */
export const QueryItem = z.object({
  /** Stable key for resume: the JSONL/CSV `id`, else `row-<n>` (1-based data row). */
  key: z.string().min(1),
  /** 0-based position in the input; rows are written in this order. */
  index: z.number().int().min(0),
  /** Line (JSONL) or record line (CSV) where the item starts, for error messages. */
  line: z.number().int().min(1),
  query: z.string().min(1),
  tools_needed: z.string(),
  complexity: z.string(),
  expected: z.string().nullable(),
  /** Unknown columns, passed through to the output CSV. */
  extra: z.record(z.string(), z.string()),
});
export type QueryItem = z.infer<typeof QueryItem>;

/** A row's Status: the session's status, or what kept the session from ending by itself. */
export const RowStatus = z.enum([...SessionStatus.options, "timeout", "error"]);
export type RowStatus = z.infer<typeof RowStatus>;

export const CorrectBy = z.enum(["exact", "numeric", "phrase", "judge"]);
export type CorrectBy = z.infer<typeof CorrectBy>;

/** What one finished query produced; stored as the batch item's output, the CSV row is derived from it. */
export const ItemOutcome = z.object({
  key: z.string(),
  index: z.number().int(),
  query: z.string(),
  tools_needed: z.string(),
  complexity: z.string(),
  expected: z.string().nullable(),
  extra: z.record(z.string(), z.string()),
  status: RowStatus,
  status_reason: z.string().nullable(),
  session_id: z.string(),
  final_plan: z.string(),
  output: z.string(),
  /** The session's logged tool calls, in order (the tool CSV is computed from these). */
  tools: z.array(
    z.object({
      server: z.string(),
      tool: z.string(),
      ok: z.boolean(),
      error_kind: z.string().nullable(),
      latency_ms: z.number(),
    }),
  ),
  /** null when there is no Expected answer to check against. */
  correct: z.boolean().nullable(),
  correct_by: CorrectBy.nullable(),
  judge_reason: z.string().nullable(),
  steps: z.number().int(),
  plan_versions: z.number().int(),
  llm_calls: z.number().int(),
  tokens: z.number().int(),
  duration_ms: z.number(),
  human_inputs: z.number().int(),
  /** Sub-agents the session called (agents.<name> / agents.send); 0 for outcomes stored before it was kept. */
  subagent_calls: z.number().int().default(0),
  /** Model calls retried after a rate limit (429) while this query ran. */
  rate_limited: z.number().int(),
  finished_at: z.string(),
});
export type ItemOutcome = z.infer<typeof ItemOutcome>;

/** One `pda batch` process working on a run (a run resumed twice has three). */
export const Invocation = z.object({
  started_at: z.string(),
  finished_at: z.string().nullable(),
  /** finished: every item done; interrupted: Ctrl-C; stopped: a fatal error (see `error`). */
  status: z.enum(["running", "finished", "interrupted", "stopped"]),
  concurrency: z.number().int(),
  ran: z.number().int(),
  rate_limited: z.number().int(),
  rate_limit_wait_ms: z.number(),
  min_limit: z.number().int(),
  transient_retries: z.number().int(),
  judge_tokens: z.number().int(),
  peak_rss_mb: z.number(),
  error: z.string().nullable(),
});
export type Invocation = z.infer<typeof Invocation>;

/** `<out>/batch.json`: which run (in which store) this folder belongs to, so `--resume` finds it. */
export const BatchState = z.object({
  $schemaVersion: z.literal(1),
  run_id: z.string(),
  db: z.string(),
  input_file: z.string(),
  input_sha256: z.string(),
  total: z.number().int(),
  model: z.string(),
  hil: z.string(),
  options: z.record(z.string(), z.unknown()),
  created_at: z.string(),
  invocations: z.array(Invocation),
});
export type BatchState = z.infer<typeof BatchState>;
