/**
 * performance/: batch runs over query files (concurrency with a shared adaptive rate limiter per provider,
 * resumable from the store), the output CSVs and summary, and run-to-run reports with a chart.
 */
export { loadOutcomes } from "./run-store.js";
export { runBatch, BATCH_GROUP_COMMIT_MS } from "./runner.js";
export type { BatchDeps, BatchOptions, BatchEvent, BatchResult, Counts } from "./types.js";
export { readQueryFile, unwrapQuotes, passThroughName, type QueryFile } from "./input.js";
export {
  AdaptiveLimiter,
  LimiterRegistry,
  type LimiterOptions,
  type LimiterStats,
  type Limiters,
  type ProviderLimiter,
} from "./limiter.js";
export { SharedLimiters, type SharedLimiterOptions } from "./shared-limiter.js";
export {
  LimitedProvider,
  retryAfterOf,
  isRateLimit,
  isTransient,
  type LimitedOptions,
} from "./limited-provider.js";
export { QueryDeadline } from "./deadline.js";
export { matchExpected, judgeAnswer, JudgeVerdict, type Verdict, type MatchOptions } from "./correct.js";
export { toolPerformance, toolsExecuted, queryRow, type ToolPerf } from "./rows.js";
export { readBatchState, statePath } from "./files.js";
export { createProgress, type Progress } from "./progress.js";
export {
  reportRun,
  compareRuns,
  readRun,
  runFromOutcomes,
  runReport,
  runComparison,
  reportMarkdown,
  type RunData,
  type Report,
  type ReportSection,
  type ReportFiles,
} from "./report.js";
export { renderChart, svgToPng } from "./chart.js";
export * from "./schemas.js";
export { runQueued, adoptResult, type QueueOptions } from "./queue-submit.js";
export { runWorker, type WorkerOptions, type WorkerDeps, type WorkerEvent } from "./queue-worker.js";
export {
  JobPayload,
  JobResult,
  JobSetup,
  JOB_PROTOCOL,
  QUEUE_NAME,
  PDA_VERSION,
  jobId,
  redisAddress,
  setupFingerprint,
} from "./queue-job.js";
