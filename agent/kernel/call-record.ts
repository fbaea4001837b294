/** A tool call's record made by the loop, for a call its host gave none of (refused before it, replayed). */
import type { ToolCallRecord, ToolHost } from "../../core/index.js";

export function measuredRecord(
  host: ToolHost,
  name: string,
  startedAt: string,
  latencyMs: number,
  r: Pick<ToolCallRecord, "ok" | "bytes" | "error_kind" | "error_message">,
): ToolCallRecord {
  const info = host.tools().find((t) => t.qualified === name || (t.unique && t.name === name));
  const record: ToolCallRecord = {
    // A tool this view does not list (a narrow agent's refused call) is still logged by its own name.
    server: info?.server ?? (name.includes(".") ? name.slice(0, name.indexOf(".")) : ""),
    tool: info?.name ?? name.slice(name.indexOf(".") + 1),
    started_at: startedAt,
    latency_ms: latencyMs,
    ok: r.ok,
    bytes: r.bytes,
  };
  if (r.error_kind !== undefined) record.error_kind = r.error_kind;
  if (r.error_message !== undefined) record.error_message = r.error_message;
  return record;
}
