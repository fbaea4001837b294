/**
 * The batch runner's contracts, shared by the local runner, the queue submitter and worker, and the run
 * store (kept here so none of them imports another for its types).
 */
import type { LoopDeps, SessionDriver } from "../agent/index.js";
import type { Budgets, Profile } from "../config/index.js";
import type { Clock, PdaError, SessionRecorder } from "../core/index.js";
import type { ModelProvider } from "../core/index.js";
import type { SessionStore } from "../memory/index.js";
import type { LimitedOptions } from "./limited-provider.js";
import type { LimiterOptions } from "./limiter.js";
import type { BatchState, Invocation, ItemOutcome } from "./schemas.js";

export interface BatchDeps {
  store: SessionStore;
  /**
   * Where the judge's model call is logged (default: the store): the runtime's recorder, so it is traced live
   * like the loop's calls.
   */
  recorder?: Pick<SessionRecorder, "recordLlmCall">;
  /** The providers as created (their own transport retries should be off: the limiter retries). */
  models: BatchModels;
  profile: Profile;
  /** A loop with the runtime's deps plus these (e.g. the CLI runtime's `loop`). */
  loop(extra: Partial<LoopDeps>): SessionDriver;
  clock?: Clock;
  newId?: () => string;
}

export interface BatchModels {
  perception: ModelProvider;
  decision: ModelProvider;
  judge?: ModelProvider;
}

export interface BatchOptions {
  input: string;
  out: string;
  /** The store's path, kept in batch.json so `--resume` finds the run. */
  db: string;
  /** What --model said, for the summary. */
  model: string;
  concurrency: number;
  resume?: boolean;
  /** Start a new run in a folder that already holds one. */
  force?: boolean;
  /** Per-query timeout; time spent waiting on the rate limiter does not count (default: the profile's). */
  timeoutMs?: number;
  /** Budgets over the profile's, per query. */
  budgets?: Partial<Budgets>;
  judge?: boolean;
  /** Relative tolerance of numeric matches. */
  tolerance?: number;
  /** How human questions are answered (recorded; the loop's NOP ends a query as awaiting_human). */
  hil: string;
  /**
   * Show the agent past sessions (default off, so runs are comparable): only those created before the run
   * started, never the run's own. Resuming keeps the run's setting; a different one is a ConfigError.
   */
  memory?: boolean;
  /** Ctrl-C: stop starting queries, cancel those in flight (they stay pending for --resume). */
  signal?: AbortSignal;
  onEvent?: (e: BatchEvent) => void;
  limiter?: Partial<LimiterOptions>;
  retry?: RetryOptions;
  /** Shortest interval between incremental CSV rewrites (default 1000 ms). */
  flushMs?: number;
}

export type RetryOptions = Omit<
  LimitedOptions,
  "clock" | "onWait" | "onRateLimited" | "onRetry" | "onRateLimitGiveUp"
>;

export interface Counts {
  total: number;
  done: number;
  failed: number;
  in_flight: number;
  tokens: number;
}

export type BatchEvent =
  | { type: "start"; run_id: string; total: number; already_done: number; to_run: number; resumed: boolean }
  | { type: "item_start"; key: string; index: number; counts: Counts }
  /** `worker`: the queue worker that ran it (queue mode only). */
  | { type: "item_end"; outcome: ItemOutcome; counts: Counts; worker?: string }
  | { type: "item_pending"; key: string; reason: string; counts: Counts }
  | { type: "rate_limited"; provider: string; delay_ms: number; limit: number }
  | { type: "retry"; provider: string; code: string; attempt: number; delay_ms: number }
  /** A queue worker refused or failed a job (another worker may take it again). */
  | { type: "worker_note"; worker: string; key: string; message: string }
  | { type: "stop"; reason: string }
  | { type: "flush"; rows: number };

export interface BatchResult {
  state: BatchState;
  status: Invocation["status"];
  outcomes: ItemOutcome[];
  remaining: number;
  error: PdaError | null;
  files: { queries: string; tools: string; summary: string };
}
