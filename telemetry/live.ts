/**
 * The live feed: the session store's recorder, wrapped so each write also becomes spans (the store's writes are
 * the whole story of a session, with the times the records carry), and loop events for what no record holds
 * (when a question was put). A failure here is reported once and never reaches the session.
 */
import type { LoopEvent } from "../agent/index.js";
import type { SessionRecorder } from "../core/index.js";
import type { SpanWriter } from "./spans.js";

export type Guard = (write: () => void) => void;

export function tracedRecorder(
  inner: SessionRecorder,
  w: SpanWriter,
  now: () => number,
  guard: Guard,
): SessionRecorder {
  return {
    startSession(session) {
      inner.startSession(session);
      guard(() => w.sessionStart(session, now()));
    },
    saveSnapshot: (id, record) => inner.saveSnapshot(id, record),
    savePlanVersion: (id, plan) => inner.savePlanVersion(id, plan),
    saveStep(id, step) {
      inner.saveStep(id, step);
      guard(() => {
        const at = now();
        w.stepStart(id, step, at);
        if (step.status !== "pending") w.stepEnd(id, step, at);
      });
    },
    recordToolCall(id, stepIndex, record) {
      inner.recordToolCall(id, stepIndex, record);
      guard(() => w.toolCall(id, stepIndex, record));
    },
    recordLlmCall(id, record) {
      inner.recordLlmCall(id, record);
      guard(() => w.llmCall(id, record));
    },
    recordHumanInput(id, input) {
      inner.recordHumanInput(id, input);
      guard(() => w.human(id, input));
    },
    recordServerLog: (id, entry) => inner.recordServerLog(id, entry),
    finishSession(session) {
      inner.finishSession(session);
      guard(() => w.sessionEnd(session, now()));
    },
  };
}

/** One loop's events: a question's ask time, for the session (or sub-agent session) that asked it. */
export function askTimes(w: SpanWriter, now: () => number, guard: Guard): (event: LoopEvent) => void {
  let current: string | undefined;
  const on = (e: LoopEvent, session: string | undefined): void => {
    if (e.type === "human_ask" && session) guard(() => w.asked(session, now()));
    else if (e.type === "agent_event") on(e.event, e.session_id);
  };
  return (e) => {
    if (e.type === "session_start") current = e.session_id;
    on(e, current);
  };
}
