/**
 * The start wait counts what the server does, not only wall time: a server whose start-up is slow because it
 * computes (as on a busy machine) is waited for; one that sits idle past its connect timeout is given up on.
 */
import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { PACKAGE_ROOT } from "../../../core/index.js";
import { MultiMCP } from "../../index.js";
import { StartTimeout, startWait, type CpuSample } from "../startwait.js";

const SLOW_SERVER = join(PACKAGE_ROOT, "dist/mcp_servers/testing/slow_start_server.js");
const hubs: MultiMCP[] = [];
afterEach(async () => {
  for (const h of hubs.splice(0)) await h.close();
});

async function startSlow(args: string[], connectTimeoutMs: number) {
  const hub = await MultiMCP.start({
    servers: [
      {
        id: "slow",
        command: process.execPath,
        args: [SLOW_SERVER, ...args],
        connect_timeout_ms: connectTimeoutMs,
      },
    ],
  });
  hubs.push(hub);
  return hub.status()[0]!;
}

/** The abort reason of a start wait over a fixed sample, once it gives up. */
async function reasonOf(
  sample: CpuSample | undefined,
  maxMs: number,
  maxCpuMs?: number,
): Promise<StartTimeout> {
  const wait = startWait({
    pid: () => 1,
    timeoutMs: 20,
    maxMs,
    maxCpuMs,
    intervalMs: 10,
    sample: () => sample,
  });
  await new Promise((resolve) => wait.signal.addEventListener("abort", resolve, { once: true }));
  return wait.signal.reason as StartTimeout;
}

describe("start wait", () => {
  it("waits for a server that is still computing past its connect timeout", async () => {
    // Half a CPU-second of start-up spread over three times as much wall time, against a 1.2 s timeout.
    const status = await startSlow(["--busy", "500"], 1200);
    expect(status.lastError).toBeUndefined();
    expect(status.state).toBe("ready");
    expect(status.tools).toBeGreaterThan(0);
  });

  it("gives up on a server that is idle at its connect timeout, saying so", async () => {
    const status = await startSlow(["--sleep", "60000"], 1500);
    expect(status.state).toBe("failed");
    expect(status.lastError).toMatch(/no answer to initialize within 1500 ms \(the process was idle\)/);
  });

  it("gives up at the cap on a process that stays busy, and at the timeout on an idle one", async () => {
    const busy = await reasonOf({ ticks: 1, runnable: true }, 100);
    expect(busy).toBeInstanceOf(StartTimeout);
    expect(busy.busy).toBe(true);
    expect(busy.message).toMatch(/kept working/);
    // A process that burnt the CPU allowance without answering is spinning, however little wall time passed.
    const spinning = await reasonOf({ ticks: 500, runnable: true }, 60_000, 1_000);
    expect(spinning.message).toMatch(/after 5000 ms of CPU time/);
    const idle = await reasonOf({ ticks: 1, runnable: false }, 60_000);
    expect(idle.busy).toBe(false);
    // No /proc to read (not Linux, or an HTTP server): plain wall time.
    const unknown = await reasonOf(undefined, 60_000);
    expect(unknown.busy).toBe(false);
  });

  it("reads nothing from /proc while a start is well within its connect timeout (a scan costs CPU)", async () => {
    let samples = 0;
    const wait = startWait({
      pid: () => 1,
      timeoutMs: 60_000,
      maxMs: 600_000,
      intervalMs: 5,
      sample: () => (samples++, { ticks: 0, runnable: true }),
    });
    // Time for a hundred samples at the old fixed interval; a late timer only makes this surer.
    await new Promise((resolve) => setTimeout(resolve, 500));
    wait.dispose();
    expect(samples).toBe(0);
    expect(wait.signal.aborted).toBe(false);
  });

  it("does not give up for idleness on a server that answered initialize (it may be waiting for us)", async () => {
    let samples = 0;
    const wait = startWait({
      pid: () => 1,
      timeoutMs: 20,
      maxMs: 600_000,
      intervalMs: 5,
      sample: () => (samples++, { ticks: 1, runnable: false }),
    });
    wait.answered();
    while (samples < 10) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setImmediate(resolve));
    wait.dispose();
    expect(wait.signal.aborted).toBe(false);
  });
});
