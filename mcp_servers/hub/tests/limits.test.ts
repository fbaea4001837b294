/**
 * Bounds on what a server can make the hub hold (issue #24): an HTTP answer past the cap fails that call
 * typed while memory stays bounded and the session stays usable; a log flood is capped, the rest counted.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { MultiMCP, type HubEvent } from "../../index.js";
import { HOSTILE_SERVER, failure, gone, listeningUrl } from "./helpers.js";

const children: ChildProcess[] = [];
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  expect(await gone(children.map((c) => c.pid))).toEqual([]);
});

/** The hostile server over HTTP; resolves with its URL (read from its stdout, bounded wait). */
async function startHttpHostile(): Promise<string> {
  const child = spawn(process.execPath, [HOSTILE_SERVER, "--http", "127.0.0.1:0"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  return listeningUrl(child, "hostile");
}

describe("HTTP answer cap", () => {
  // 100 MB: an uncapped read would hold at least that much (more as a string), so a bound well under it
  // tells a capped hub from an uncapped one while leaving room for what RSS picks up on a busy machine.
  it("a 100 MB answer fails typed, the hub's memory stays bounded, and the next call works", async () => {
    const url = await startHttpHostile();
    const hub = await MultiMCP.start({ servers: [{ id: "big", url, timeout_ms: 30_000 }] });
    try {
      expect(await hub.call("big.huge", { mb: 1 })).toHaveLength(1024 * 1024);
      global.gc?.();
      const before = process.memoryUsage().rss;
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
      const e = await failure(hub.call("big.huge", { mb: 100 })).finally(() => clearInterval(sampler));
      peak = Math.max(peak, process.memoryUsage().rss);
      expect(e.code).toBe("TOOL_ANSWER_TOO_LARGE");
      expect(e.message).toMatch(/big\.huge: the answer exceeded 10485760 bytes/);
      console.log(`rss growth during the 100 MB answer: ${((peak - before) / 1048576).toFixed(1)} MB`);
      expect(peak - before).toBeLessThan(60 * 1024 * 1024);
      expect(typeof (await hub.call("big.pid", {}))).toBe("number");
    } finally {
      await hub.close();
    }
  });
});

describe("log limits", () => {
  it("a flood of 20,000 log messages keeps at most the per-call cap and counts the rest in one entry", async () => {
    const logs: Extract<HubEvent, { type: "log" }>[] = [];
    const hub = await MultiMCP.start(
      { servers: [{ id: "noisy", command: process.execPath, args: [HOSTILE_SERVER], timeout_ms: 60_000 }] },
      { onEvent: (e) => e.type === "log" && logs.push(e) },
    );
    try {
      expect(await hub.call("noisy.flood", { n: 20_000 })).toEqual({ sent: 20_000 });
      const kept = logs.filter((e) => e.logger === "flood");
      const reports = logs.filter((e) => e.logger === "pda");
      expect(kept.length).toBeGreaterThan(0);
      expect(kept.length).toBeLessThanOrEqual(500);
      expect(reports).toHaveLength(1);
      const dropped = Number(
        /^(\d+) more log messages from noisy dropped/.exec(String(reports[0]!.data))?.[1],
      );
      expect(kept.length + dropped).toBe(20_000);
    } finally {
      await hub.close();
    }
  });
});
