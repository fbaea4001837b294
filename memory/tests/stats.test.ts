import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolCallRecord } from "../../core/index.js";
import { SessionStore, ToolStat, describeReliability } from "../index.js";
import { simulateSession } from "./simulate.js";

let dir: string;
let store: SessionStore;
const call = (server: string, tool: string, latency: number, at: string, error?: string): ToolCallRecord => ({
  server,
  tool,
  ok: !error,
  latency_ms: latency,
  bytes: 10,
  started_at: at,
  ...(error ? { error_kind: error, error_message: `${tool} failed` } : {}),
});

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-stats-"));
  store = SessionStore.open(join(dir, "pda.db"));
  simulateSession(store, { id: "s", query: "q", steps: 0, noFinish: true });
  const recent = "2025-02-01T00:00:00.000Z";
  // math.add: 20 calls, latencies 1..20 ms, all fine.
  for (let i = 1; i <= 20; i++) store.recordToolCall("s", 0, call("math", "add", i, recent));
  // web.fetch: 10 calls, 3 failures of two kinds.
  for (let i = 1; i <= 10; i++) {
    const err = i <= 2 ? "TOOL_TIMEOUT" : i === 3 ? "TOOL_ERROR" : undefined;
    store.recordToolCall("s", null, call("web", "fetch", 100 * i, recent, err));
  }
  // docs.search: 4 calls, one failure; math.cbrt: 2 calls (under minCalls).
  for (let i = 1; i <= 4; i++)
    store.recordToolCall("s", 1, call("docs", "search", 50, recent, i === 4 ? "SERVER_CRASHED" : undefined));
  for (let i = 1; i <= 2; i++) store.recordToolCall("s", 1, call("math", "cbrt", 2, recent));
  // Old calls of math.add that failed: outside a window starting in 2025.
  for (let i = 0; i < 5; i++)
    store.recordToolCall("s", 0, call("math", "add", 999, "2024-01-01T00:00:00.000Z", "TOOL_ERROR"));
});
afterAll(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("tool statistics", () => {
  it("gives success rate, nearest-rank latency percentiles and error kinds per tool", () => {
    const stats = store.toolStats({ since: "2025-01-01T00:00:00.000Z" });
    for (const s of stats) ToolStat.parse(s);
    const by = Object.fromEntries(stats.map((s) => [`${s.server}.${s.tool}`, s]));
    expect(stats.map((s) => `${s.server}.${s.tool}`)).toEqual([
      "math.add",
      "web.fetch",
      "docs.search",
      "math.cbrt",
    ]);
    expect(by["math.add"]).toMatchObject({
      calls: 20,
      ok: 20,
      failures: 0,
      success_rate: 1,
      p50_ms: 10,
      p95_ms: 19,
      error_kinds: {},
    });
    expect(by["web.fetch"]).toMatchObject({
      calls: 10,
      ok: 7,
      success_rate: 0.7,
      p50_ms: 500,
      p95_ms: 1000,
      error_kinds: { TOOL_TIMEOUT: 2, TOOL_ERROR: 1 },
    });
    expect(by["docs.search"]!.error_kinds).toEqual({ SERVER_CRASHED: 1 });
  });

  it("counts every call when no window is given, and limits the rows", () => {
    const add = store.toolStats().find((s) => s.tool === "add")!;
    expect(add).toMatchObject({ calls: 25, ok: 20, error_kinds: { TOOL_ERROR: 5 }, p95_ms: 999 });
    expect(store.toolStats({ limit: 2 })).toHaveLength(2);
  });

  it("names the most and least reliable tools for the decision prompt", () => {
    const r = store.mostAndLeastReliable(2, { since: "2025-01-01T00:00:00.000Z" });
    expect(r.most.map((s) => s.tool)).toEqual(["add"]); // cbrt has too few calls
    expect(r.least.map((s) => s.tool)).toEqual(["fetch", "search"]);
    const text = describeReliability(r);
    expect(text).toContain("Most reliable tools: math.add (20/20 ok, p50 10 ms)");
    expect(text).toContain("web.fetch (7/10 ok, p50 500 ms; TOOL_TIMEOUT×2, TOOL_ERROR×1)");
    // The default window is the last 30 days before the store's clock: these 2025 calls are long gone.
    expect(store.mostAndLeastReliable(3)).toEqual({ most: [], least: [] });
  });
});
