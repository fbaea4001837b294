/**
 * Exit's wait for the collector (sdk.ts, flushLimit): the 3 s count only while this process sits idle waiting.
 * While it still works (exporting on a starved machine; here a thread that spins), exit keeps waiting, so the
 * spans are not dropped for the machine's being slow. In process, against the real exporter and a real
 * collector on 127.0.0.1 that takes the spans and never answers.
 */
import { performance } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FLUSH_LIMIT_MS, startTelemetry } from "../sdk.js";
import { startReceiver, type Receiver } from "./receiver.js";

const settings = {
  protocol: "http/json",
  metricsProtocol: "http/json",
  traces: true,
  metrics: false,
  captureContent: false,
} as const;

/** A thread of this process that keeps one CPU busy for `ms` of wall time. */
function spin(ms: number): Promise<void> {
  const w = new Worker(`const end = Date.now() + ${ms}; while (Date.now() < end);`, { eval: true });
  return new Promise((resolve, reject) => {
    w.once("error", reject);
    w.once("exit", () => resolve());
  });
}

describe("exit's wait for the collector", () => {
  let slow: Receiver;
  const saved = { ...process.env };
  beforeEach(async () => {
    slow = await startReceiver({ delayMs: 300_000 });
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = slow.url;
    // Only the flush limit may end the wait: the exporter itself would wait as long as the collector takes.
    process.env.OTEL_EXPORTER_OTLP_TIMEOUT = "600000";
    process.env.OTEL_BSP_EXPORT_TIMEOUT = "600000";
  });
  afterEach(async () => {
    process.env = { ...saved };
    await slow.close();
  });

  /** Shut down, with a thread spinning for `busyMs` from the moment exit starts waiting. */
  async function shutdownWhile(busyMs?: number) {
    const warnings: string[] = [];
    const t = await startTelemetry(settings, { redact: (s) => s, warn: (m) => warnings.push(m) });
    t.batchStart("run-1", {});
    t.batchEnd("ok");
    const t0 = performance.now();
    const busy = busyMs ? spin(busyMs) : undefined;
    await t.shutdown();
    const waited = performance.now() - t0;
    await busy;
    return { waited, warnings };
  }

  it("idle: gives up soon after 3 s with one warning naming the collector", async () => {
    const { waited, warnings } = await shutdownWhile();
    expect(slow.holding()).toBeGreaterThan(0); // the spans reached it; it only never answered
    expect(waited).toBeGreaterThanOrEqual(FLUSH_LIMIT_MS);
    expect(waited).toBeLessThan(FLUSH_LIMIT_MS + 5000);
    expect(warnings).toEqual([expect.stringMatching(/collector did not take the last spans within 3 s/)]);
  });

  it("busy: the 3 s do not run out while this process keeps working; it gives up once it sits idle", async () => {
    const busyMs = 2.5 * FLUSH_LIMIT_MS;
    const { waited, warnings } = await shutdownWhile(busyMs);
    // Without the CPU check the wait would have ended at ~3 s, well inside the spinning.
    expect(slow.holding()).toBeGreaterThan(0);
    expect(waited).toBeGreaterThanOrEqual(busyMs);
    expect(warnings).toEqual([expect.stringMatching(/collector did not take the last spans within 3 s/)]);
  });
});
