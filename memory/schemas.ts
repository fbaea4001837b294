/**
 * The store's read model: what listing, search, statistics and the timeline return. Types come from these
 * schemas; session data itself uses the core schemas (AgentSession, Step, ...).
 */
import { z } from "zod";
import {
  HumanInput,
  LlmCallRecord,
  PlanVersion,
  SessionStatus,
  SnapshotRecord,
  Step,
  ToolCallRecord,
  Usage,
} from "../core/index.js";

/**
 * A session's status as shown to people: the stored SessionStatus, or "interrupted" for a session still
 * marked running whose writer process is gone (or that was marked interrupted explicitly).
 */
export const DisplayStatus = z.enum([...SessionStatus.options, "interrupted"]);
export type DisplayStatus = z.infer<typeof DisplayStatus>;

/** Statuses that count as a failed attempt in memory search. */
export const FAILED_STATUSES = ["failed", "aborted", "budget_exhausted"] as const;

export const SessionListItem = z.object({
  session_id: z.string(),
  status: DisplayStatus,
  original_query: z.string(),
  final_answer: z.string().nullable(),
  status_reason: z.string().nullable(),
  agent: z.string().nullable(),
  parent_session_id: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  finished_at: z.string().nullable(),
  duration_ms: z.number(),
  steps: z.number().int(),
  llm_calls: z.number().int(),
  tokens: z.number().int(),
  tool_calls: z.number().int(),
});
export type SessionListItem = z.infer<typeof SessionListItem>;

export const SessionInfo = SessionListItem.extend({
  pending_question: z.string().nullable(),
  solution_summary: z.string().nullable(),
  result_requirement: z.string().nullable(),
  confidence: z.number().nullable(),
  owner_pid: z.number().int().nullable(),
  owner_host: z.string().nullable(),
  interrupted_reason: z.string().nullable(),
});
export type SessionInfo = z.infer<typeof SessionInfo>;

export const ListSessionsOptions = z.object({
  /** Words that must all appear (prefix match) in the query, requirement, summary or answer. */
  search: z.string().optional(),
  status: DisplayStatus.optional(),
  limit: z.number().int().positive().default(20),
});
export type ListSessionsOptions = z.input<typeof ListSessionsOptions>;

/** One page of the session browser (SessionStore.browseSessions), newest first. */
export const BrowseOptions = z.object({
  /** Words that must all appear (prefix match), as in ListSessionsOptions. */
  search: z.string().optional(),
  status: DisplayStatus.optional(),
  agent: z.string().min(1).optional(),
  /** Only the sessions of this batch run. */
  batch_run: z.string().min(1).optional(),
  /** ISO time: sessions created at or after it. */
  since: z.string().min(1).optional(),
  /** ISO time: sessions created before it. */
  until: z.string().min(1).optional(),
  /** The `next` cursor of the previous page. */
  after: z.string().min(1).optional(),
  limit: z.number().int().positive().max(500).default(50),
});
export type BrowseOptions = z.input<typeof BrowseOptions>;

export const SessionPage = z.object({
  items: z.array(SessionListItem),
  /** Cursor for the next page; null on the last one. */
  next: z.string().nullable(),
});
export type SessionPage = z.infer<typeof SessionPage>;

/** One past session that memory search found relevant. */
export const MemoryHit = z.object({
  session_id: z.string(),
  /** "solution": the session reached its goal. "warning": it was tried and failed; see `reason`. */
  kind: z.enum(["solution", "warning"]),
  status: SessionStatus,
  /** Share (0..1) of the query's weighted content words found in the past session. */
  relevance: z.number().min(0).max(1),
  /** relevance with the small recency boost; hits are ordered by it. */
  score: z.number(),
  original_query: z.string(),
  result_requirement: z.string().nullable(),
  solution_summary: z.string().nullable(),
  final_answer: z.string().nullable(),
  /** For warnings: "tried and failed because …". Null for solutions. */
  reason: z.string().nullable(),
  /** The query words (as indexed, i.e. stemmed) the past session contains. */
  matched_terms: z.array(z.string()),
  created_at: z.string(),
  /** How many past sessions this hit stands for: identical ones (same query, same answer or reason) merge. */
  sessions: z.number().int().min(1),
});
export type MemoryHit = z.infer<typeof MemoryHit>;

export const SearchOptions = z.object({
  limit: z.number().int().positive().default(5),
  /** Minimum relevance (0..1) for a hit. */
  threshold: z.number().min(0).max(1).default(0.5),
  /** Include failed sessions as warnings (default true). */
  warnings: z.boolean().default(true),
  /**
   * ISO time: only sessions created before it. A batch run passes its start, so neither its own sessions nor
   * later ones answer its queries.
   */
  before: z.iso.datetime().optional(),
});
export type SearchOptions = z.input<typeof SearchOptions>;

export const ToolCallRow = ToolCallRecord.extend({
  id: z.number().int(),
  session_id: z.string(),
  step_index: z.number().int().nullable(),
});
export type ToolCallRow = z.infer<typeof ToolCallRow>;

export const ToolCallFilter = z.object({
  session_id: z.string().optional(),
  server: z.string().optional(),
  tool: z.string().optional(),
  ok: z.boolean().optional(),
  /** ISO time: calls started at or after it. */
  since: z.string().optional(),
  limit: z.number().int().positive().default(1000),
});
export type ToolCallFilter = z.input<typeof ToolCallFilter>;

/** How one tool has behaved over a window of calls. */
export const ToolStat = z.object({
  server: z.string(),
  tool: z.string(),
  calls: z.number().int(),
  ok: z.number().int(),
  failures: z.number().int(),
  success_rate: z.number().min(0).max(1),
  p50_ms: z.number(),
  p95_ms: z.number(),
  /** Failure counts by error kind (e.g. TOOL_TIMEOUT). */
  error_kinds: z.record(z.string(), z.number().int()),
  last_called_at: z.string(),
});
export type ToolStat = z.infer<typeof ToolStat>;

export const ToolStatsOptions = z.object({
  /** ISO time: only calls started at or after it. */
  since: z.string().optional(),
  /** Most tools returned (the most called first). */
  limit: z.number().int().positive().default(100),
});
export type ToolStatsOptions = z.input<typeof ToolStatsOptions>;

export const Reliability = z.object({ most: z.array(ToolStat), least: z.array(ToolStat) });
export type Reliability = z.infer<typeof Reliability>;

/** An LLM call as the timeline shows it: the prompt and raw response are left out (see llmCalls). */
export const LlmCallSummary = LlmCallRecord.omit({ prompt: true, raw_response: true, value: true }).extend({
  prompt_bytes: z.number().int(),
  raw_response_bytes: z.number().int(),
});
export type LlmCallSummary = z.infer<typeof LlmCallSummary>;

/** Everything `pda show` prints, in the order it happened. */
export const TimelineEvent = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("snapshot"), at: z.string(), snapshot: SnapshotRecord }),
  z.object({ kind: z.literal("plan"), at: z.string(), plan: PlanVersion }),
  z.object({
    kind: z.literal("step"),
    at: z.string(),
    step: Step,
    result_bytes: z.number().int().nullable(),
    result_truncated: z.boolean(),
    tool_calls: z.array(ToolCallRow),
  }),
  /** A tool call made outside any step. */
  z.object({ kind: z.literal("tool"), at: z.string(), call: ToolCallRow }),
  z.object({ kind: z.literal("llm"), at: z.string(), call: LlmCallSummary }),
  z.object({ kind: z.literal("human"), at: z.string(), input: HumanInput }),
]);
export type TimelineEvent = z.infer<typeof TimelineEvent>;

export const Timeline = z.object({
  session: SessionInfo,
  usage: Usage,
  events: z.array(TimelineEvent),
});
export type Timeline = z.infer<typeof Timeline>;

export const BatchRun = z.object({
  id: z.string(),
  input_file: z.string().nullable(),
  options: z.record(z.string(), z.unknown()),
  status: z.string(),
  started_at: z.string(),
  finished_at: z.string().nullable(),
});
export type BatchRun = z.infer<typeof BatchRun>;

export const BatchItem = z.object({
  run_id: z.string(),
  item_key: z.string(),
  query: z.string(),
  status: z.string(),
  session_id: z.string().nullable(),
  /** The item's output row (whatever the batch runner writes to its CSV), as JSON. */
  output: z.unknown().nullable(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
});
export type BatchItem = z.infer<typeof BatchItem>;

/** A batch run in the list of runs, with its item counts by status. */
export const BatchRunSummary = z.object({
  id: z.string(),
  input_file: z.string().nullable(),
  status: z.string(),
  started_at: z.string(),
  finished_at: z.string().nullable(),
  items: z.number().int(),
  item_statuses: z.record(z.string(), z.number().int()),
});
export type BatchRunSummary = z.infer<typeof BatchRunSummary>;
