/**
 * What a call's record says: its answer's size (taken from the stdio line, not the result serialised again)
 * and its start time (formatted without a Date per call).
 */
import { afterEach, expect, it } from "vitest";
import type { ToolCallRecord } from "../../../core/index.js";
import { MultiMCP } from "../../index.js";
import { isoTime } from "../multi.js";
import { FAULT_SERVER } from "./helpers.js";

const open: MultiMCP[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((h) => h.close()));
});

it("records the bytes of a large answer that arrives in many reads", async () => {
  const hub = await MultiMCP.start({
    servers: [{ id: "fault", command: process.execPath, args: [FAULT_SERVER] }],
  });
  open.push(hub);
  const records: ToolCallRecord[] = [];
  // Two-byte characters: a count of characters instead of bytes would be half the size.
  const text = "é".repeat(150_000);
  const before = Date.now();
  expect(await hub.call("echo", { text }, { onRecord: (r) => records.push(r) })).toBe(text);
  const after = Date.now();
  const result = { content: [{ type: "text", text: JSON.stringify(text) }] };
  const resultBytes = Buffer.byteLength(JSON.stringify(result));
  // The line also holds the JSON-RPC envelope: `"jsonrpc":"2.0","id":N` and the `result` key.
  expect(records[0]!.bytes).toBeGreaterThan(resultBytes);
  expect(records[0]!.bytes).toBeLessThan(resultBytes + 60);
  // A canonical ISO time, within the call.
  const started = records[0]!.started_at;
  expect(started).toBe(new Date(Date.parse(started)).toISOString());
  expect(Date.parse(started)).toBeGreaterThanOrEqual(before);
  expect(Date.parse(started)).toBeLessThanOrEqual(after);
});

it("formats start times exactly as Date#toISOString does", () => {
  const base = Date.UTC(2026, 11, 31, 23, 59, 58);
  const times = [0, 1, 9, 10, 99, 100, 999, 1000, 1001, 1999.7, 2000, 2001, 86_400_000].map((d) => base + d);
  times.push(
    0,
    999,
    5.5,
    -0.5,
    -1,
    -1500,
    Date.UTC(9999, 11, 31, 23, 59, 59, 999),
    Date.UTC(10000, 0, 1, 0, 0, 0, 1),
  );
  // In order and out of order, so the kept second is both reused and replaced.
  for (const t of [...times, ...times.reverse()]) expect(isoTime(t)).toBe(new Date(t).toISOString());
});
