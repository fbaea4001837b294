/**
 * A per-session view of the shared tool host: calls made through it are measured and reported only to this
 * session, so concurrent sessions over one hub (batch runs) never see each other's calls.
 */
import { ToolError, type CallOptions, type ToolCallRecord, type ToolHost } from "../../core/index.js";
import { measuredRecord } from "./call-record.js";
import { HaltedCall } from "./journal.js";

export function scopedHost(host: ToolHost, now: () => number, iso: () => string): ToolHost {
  const listeners = new Set<(r: ToolCallRecord) => void>();
  const emit = (r: ToolCallRecord) => {
    for (const l of listeners) l(r);
  };
  return {
    tools: () => host.tools(),
    replay() {
      const r = host.replay?.();
      // Its records reach this host's listeners (the session log, the trace) as a call's record does.
      return (
        r && {
          outcomes: r.outcomes,
          clock: r.clock,
          confirm: (calls, options) => r.confirm(calls, { ...options, onRecord: emit }),
        }
      );
    },
    onCall(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async call(name: string, args: Record<string, unknown>, options?: CallOptions) {
      // The host's own record of this call when it gives one (the hub does: bytes, error kind, latency), so
      // nothing is measured twice; else one measured here (an in-process host, a call refused before the hub).
      let record: ToolCallRecord | undefined;
      const started = now();
      const startedAt = iso();
      try {
        const value = await host.call(name, args, { ...options, startedAt, onRecord: (r) => (record = r) });
        emit(
          record ??
            measuredRecord(host, name, startedAt, now() - started, {
              ok: true,
              bytes: Buffer.byteLength(JSON.stringify(value) ?? ""),
            }),
        );
        return value;
      } catch (e) {
        // A call its step's halt cut short is not a call: on resume it is made (or asked about) again.
        if (e instanceof HaltedCall) throw e;
        const code = e instanceof ToolError ? e.code : "TOOL_ERROR";
        emit(
          record ??
            measuredRecord(host, name, startedAt, now() - started, {
              ok: false,
              bytes: 0,
              error_kind: code,
              error_message: (e as Error).message,
            }),
        );
        throw e;
      }
    },
  };
}
