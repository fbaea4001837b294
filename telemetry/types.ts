/** What the rest of pda sees of telemetry: the door's contract, free of any OpenTelemetry import. */
import type { LoopEvent } from "../agent/index.js";
import type { SessionRecorder } from "../core/index.js";
import type { SessionStore } from "../memory/index.js";

/** What `pda export --otel` reads of the store. */
export type StoredSessions = Pick<
  SessionStore,
  "getSession" | "timeline" | "llmCalls" | "childSessions" | "batchRun" | "batchItems" | "resolveId"
>;

export interface Telemetry {
  /** `inner` with each write also turned into spans and metrics as it happens. */
  recorder(inner: SessionRecorder): SessionRecorder;
  /** A handler for one loop's events (they tell when a human question was put). */
  events(): (event: LoopEvent) => void;
  /** A batch run's span: the sessions started until batchEnd are its children. */
  batchStart(runId: string, attributes?: Record<string, string | number>): void;
  batchEnd(status: string): void;
  /** A stored session, its sub-agent sessions under the steps that called them, with the stored times. */
  exportSession(store: StoredSessions, id: string): void;
  /** A stored batch run with all its sessions under one span. Returns how many sessions were sent. */
  exportBatch(store: StoredSessions, runId: string): number;
  /** Flush and stop, waiting at most a bounded time for the collector. */
  shutdown(): Promise<void>;
}
