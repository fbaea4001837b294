/**
 * `pda export --otel`: a stored session replayed into the span writer in the order things happened, with the
 * stored times, so its trace matches the one a live run would have sent. Sub-agent sessions hang under the
 * step that called them; a batch run's sessions under the run's span.
 */
import type { Context } from "@opentelemetry/api";
import type { SpanWriter } from "./spans.js";
import type { StoredSessions } from "./types.js";

const ms = (iso: string) => Date.parse(iso);

/**
 * A write at a time; `rank` orders writes made in the same millisecond: a step opens, the perception that
 * judges it, the step closes, then other calls.
 */
interface Write {
  at: number;
  rank: number;
  run: () => void;
}

export function exportStored(
  w: SpanWriter,
  store: StoredSessions,
  idOrPrefix: string,
  parent?: Context,
): void {
  const id = store.resolveId(idOrPrefix);
  const session = store.getSession(id);
  const timeline = store.timeline(id);
  w.sessionStart(session, ms(session.created_at), parent);
  const writes: Write[] = [];
  let last = ms(session.created_at);
  const add = (at: number, rank: number, run: () => void) => {
    writes.push({ at, rank, run });
    last = Math.max(last, at);
  };
  // A step ends once its result is judged (live, the span ends then): the perception of its result is stored.
  const judged = new Map<number, number>();
  for (const e of timeline.events) {
    if (
      e.kind === "snapshot" &&
      e.snapshot.snapshot_type === "step_result" &&
      e.snapshot.step_index !== undefined
    )
      judged.set(e.snapshot.step_index, ms(e.at));
  }
  for (const e of timeline.events) {
    if (e.kind === "step") {
      const start = ms(e.at);
      // The store keeps when a step started; it ended when its result was judged, or its run and tools ended.
      let end = Math.max(start + (e.step.execution_result?.duration_ms ?? 0), judged.get(e.step.index) ?? 0);
      for (const call of e.tool_calls) {
        end = Math.max(end, ms(call.started_at) + call.latency_ms);
        add(ms(call.started_at), 2, () => w.toolCall(id, call.step_index, call));
      }
      add(start, 0, () => w.stepStart(id, e.step, start));
      add(end, 1, () => w.stepEnd(id, e.step, end));
    } else if (e.kind === "tool") {
      add(ms(e.call.started_at), 2, () => w.toolCall(id, e.call.step_index, e.call));
    } else if (e.kind === "human") {
      add(ms(e.at), 2, () => w.human(id, e.input));
    }
  }
  for (const call of store.llmCalls(id)) {
    // Judging a step's result is part of the step (live, the step is still open then): in the millisecond
    // the step ends, a perception call goes before the end, any other call after it.
    add(ms(call.started_at), call.role === "perception" ? 0.5 : 2, () => w.llmCall(id, call));
    last = Math.max(last, ms(call.started_at) + call.latency_ms);
  }
  writes.sort((a, b) => a.at - b.at || a.rank - b.rank);
  for (const write of writes) write.run();
  // Sub-agents before the session ends: its steps' contexts are dropped then.
  const calls = new Map((session.agent_calls ?? []).map((c) => [c.session_id, c]));
  for (const child of store.childSessions(id)) {
    exportStored(w, store, child.session_id, w.stepContext(id, calls.get(child.session_id)?.step_index));
  }
  // The time finishSession stored; a session that never finished (its process died) ends at its last write.
  const finished = timeline.session.finished_at;
  w.sessionEnd(session, finished ? ms(finished) : Math.max(ms(timeline.session.updated_at), last));
}

/** A batch run and every session its items ran. Returns the number of sessions sent. */
export function exportBatch(w: SpanWriter, store: StoredSessions, runId: string): number {
  const run = store.batchRun(runId);
  const items = store.batchItems(runId);
  w.batchStart(run.id, ms(run.started_at), run.input_file ? { "pda.batch.input_file": run.input_file } : {});
  let sent = 0;
  let last = ms(run.started_at);
  for (const item of items) {
    if (item.finished_at) last = Math.max(last, ms(item.finished_at));
    if (!item.session_id) continue;
    exportStored(w, store, item.session_id);
    sent += 1;
  }
  w.batchEnd(run.finished_at ? ms(run.finished_at) : last, run.status);
  return sent;
}
