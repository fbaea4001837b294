/**
 * Hub overhead: latency of math.add through MultiMCP next to the raw MCP SDK Client on the same server
 * (stdio), measured in the same run, sequentially and with 16 calls in flight; plus, for contrast, the
 * original system's design of one process per call. Prints JSON.
 *   node dist/bench/hub.js [--calls 1000] [--rounds 20] [--spawn-calls 20]
 * Raw and hub blocks alternate in rounds so machine load hits both alike.
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { distPath } from "../core/index.js";
import { MultiMCP } from "../mcp_servers/index.js";

const { values } = parseArgs({
  options: { calls: { type: "string" }, "spawn-calls": { type: "string" }, rounds: { type: "string" } },
});
const CALLS = Number(values.calls ?? 1000);
const SPAWN_CALLS = Number(values["spawn-calls"] ?? 20);
const IN_FLIGHT = 16;
const ROUNDS = Number(values.rounds ?? 20);
const MATH = distPath("mcp_servers/math/server.js");

type Call = (i: number) => Promise<unknown>;

function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

function summary(latencies: number[], wallMs: number, cpuUs?: number) {
  const s = [...latencies].sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return {
    calls: s.length,
    median_ms: r(percentile(s, 50)),
    p99_ms: r(percentile(s, 99)),
    calls_per_s: Math.round((s.length / wallMs) * 1000),
    ...(cpuUs !== undefined && { client_cpu_us_per_call: Math.round((cpuUs / s.length) * 10) / 10 }),
  };
}

/** `n` calls, at most `inFlight` at a time; each call's latency into `out`. Returns wall time. */
async function run(call: Call, n: number, inFlight: number, out: number[]): Promise<number> {
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const t = performance.now();
      await call(i);
      out.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return performance.now() - started;
}

async function compare(raw: Call, hub: Call, inFlight: number) {
  const lat = { raw: [] as number[], hub: [] as number[] };
  const wall = { raw: 0, hub: 0 };
  // CPU time of this (client) process: steadier than wall time on a shared machine.
  const cpu = { raw: 0, hub: 0 };
  const per = Math.ceil(CALLS / ROUNDS);
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which goes first, so neither always runs on a warmer or a busier machine.
    const order: ("raw" | "hub")[] = round % 2 === 0 ? ["raw", "hub"] : ["hub", "raw"];
    for (const which of order) {
      const before = process.cpuUsage();
      wall[which] += await run(which === "raw" ? raw : hub, per, inFlight, lat[which]);
      const used = process.cpuUsage(before);
      cpu[which] += used.user + used.system;
    }
  }
  const r = summary(lat.raw, wall.raw, cpu.raw);
  const h = summary(lat.hub, wall.hub, cpu.hub);
  return {
    raw: r,
    hub: h,
    ratio_median: Math.round((h.median_ms / r.median_ms) * 100) / 100,
    ratio_p99: Math.round((h.p99_ms / r.p99_ms) * 100) / 100,
    ratio_throughput: Math.round((r.calls_per_s / h.calls_per_s) * 100) / 100,
    ratio_client_cpu: Math.round((cpu.hub / cpu.raw) * 100) / 100,
  };
}

async function main(): Promise<void> {
  const client = new Client({ name: "bench-raw", version: "0" });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [MATH], stderr: "ignore" }),
  );
  const hub = await MultiMCP.start({ servers: [{ id: "math", command: process.execPath, args: [MATH] }] });
  let recorded = 0;
  hub.onCall(() => recorded++);

  const raw: Call = async (i) => {
    const r = await client.callTool({ name: "add", arguments: { a: i, b: 1 } });
    if (r.isError) throw new Error("raw call failed");
  };
  const viaHub: Call = async (i) => {
    const v = await hub.call("math.add", { a: i, b: 1 });
    if (v !== i + 1) throw new Error(`hub returned ${String(v)}`);
  };

  // Warm up JIT, validators and both sessions.
  await run(raw, 200, 4, []);
  await run(viaHub, 200, 4, []);

  const sequential = await compare(raw, viaHub, 1);
  const concurrent = await compare(raw, viaHub, IN_FLIGHT);
  const callsThroughHub = recorded;

  // The original design: start a process, initialise, call once, stop.
  const spawnLat: number[] = [];
  const spawnStart = performance.now();
  for (let i = 0; i < SPAWN_CALLS; i++) {
    const t = performance.now();
    const c = new Client({ name: "bench-spawn", version: "0" });
    await c.connect(new StdioClientTransport({ command: process.execPath, args: [MATH], stderr: "ignore" }));
    await c.callTool({ name: "add", arguments: { a: i, b: 1 } });
    await c.close();
    spawnLat.push(performance.now() - t);
  }
  const spawnPerCall = summary(spawnLat, performance.now() - spawnStart);

  await hub.close();
  await client.close();

  const target = 1.2;
  process.stdout.write(
    `${JSON.stringify(
      {
        bench: "hub",
        server: "math.add over stdio",
        node: process.version,
        loadavg_1m: Math.round(loadavg()[0]! * 100) / 100,
        sequential,
        concurrent_16_in_flight: concurrent,
        spawn_per_call: {
          ...spawnPerCall,
          vs_hub_sequential_median: Math.round(spawnPerCall.median_ms / sequential.hub.median_ms),
        },
        records_emitted: callsThroughHub,
        target_ratio: target,
        target_met: sequential.ratio_median <= target && concurrent.ratio_median <= target,
      },
      null,
      2,
    )}\n`,
  );
}

await main();
