/**
 * Where the loop writes a session as it happens. memory/ implements it on SQLite; every method is
 * synchronous and durable on return, so a crash loses at most the step in flight.
 */
import type {
  AgentSession,
  HumanInput,
  LlmCallRecord,
  ServerLogEntry,
  PlanVersion,
  SnapshotRecord,
  Step,
  ToolCallRecord,
} from "./schemas.js";

export interface SessionRecorder {
  /** Insert the session row (status running). */
  startSession(session: AgentSession): void;
  saveSnapshot(sessionId: string, record: SnapshotRecord): void;
  savePlanVersion(sessionId: string, plan: PlanVersion): void;
  /** Insert or update the step with this index. */
  saveStep(sessionId: string, step: Step): void;
  recordToolCall(sessionId: string, stepIndex: number | null, record: ToolCallRecord): void;
  recordLlmCall(sessionId: string, record: LlmCallRecord): void;
  recordHumanInput(sessionId: string, input: HumanInput): void;
  /** A server's log message, kept with the session that was running (null when none, or several, were). */
  recordServerLog(sessionId: string | null, entry: ServerLogEntry): void;
  /** Status, state, usage and the full session JSON; called when a session ends or pauses. */
  finishSession(session: AgentSession): void;
}

/** A recorder that keeps nothing, for benchmarks of the loop alone. */
export const nullRecorder: SessionRecorder = {
  startSession() {},
  saveSnapshot() {},
  savePlanVersion() {},
  saveStep() {},
  recordToolCall() {},
  recordLlmCall() {},
  recordHumanInput() {},
  recordServerLog() {},
  finishSession() {},
};
