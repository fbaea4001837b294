/**
 * Hub overhead: latency of math.add through MultiMCP next to the raw MCP SDK v2 Client (its own
 * StdioClientTransport) on the same server, measured in the same run, sequentially and with 16 calls in
 * flight; plus, for contrast, the original system's design of one process per call. Prints JSON.
 *   node dist/bench/hub.js [--calls 600] [--rounds 21] [--warmup 2000] [--spawn-calls 10]
 * Each round runs a block of `--calls` calls through each (which goes first alternates), so load on the
 * shared machine hits both alike; each round's hub/raw pair gives its own ratios, and the figures are the
 * median of those ratios with their p10–p90 spread. Both paths are warmed up first so V8 has optimised them.
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { distPath, percentile } from "../core/index.js";
import { MultiMCP } from "../mcp_servers/index.js";

const { values } = parseArgs({
  options: {
    calls: { type: "string" },
    rounds: { type: "string" },
    warmup: { type: "string" },
    "spawn-calls": { type: "string" },
  },
});
const CALLS = Number(values.calls ?? 600);
const ROUNDS = Number(values.rounds ?? 21);
const WARMUP = Number(values.warmup ?? 2000);
const SPAWN_CALLS = Number(values["spawn-calls"] ?? 10);
const IN_FLIGHT = 16;
const TARGET = 1.2;
const MATH = distPath("mcp_servers/math/server.js");

type Call = (i: number) => Promise<unknown>;
type Side = "raw" | "hub";

const round3 = (x: number) => Math.round(x * 1000) / 1000;
const round2 = (x: number) => Math.round(x * 100) / 100;

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);

/** The median of per-round ratios and their spread. */
function spread(ratios: number[]) {
  const s = sorted(ratios);
  return {
    median: round2(percentile(s, 0.5)),
    p10: round2(percentile(s, 0.1)),
    p90: round2(percentile(s, 0.9)),
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

interface Block {
  median: number;
  p99: number;
  /** Client (this process) CPU per call, µs: steadier than wall time on a shared machine. */
  cpu: number;
  wall: number;
}

async function block(call: Call, inFlight: number, pooled: number[]): Promise<Block> {
  const lat: number[] = [];
  const before = process.cpuUsage();
  const wall = await run(call, CALLS, inFlight, lat);
  const used = process.cpuUsage(before);
  pooled.push(...lat);
  const s = sorted(lat);
  return {
    median: percentile(s, 0.5),
    p99: percentile(s, 0.99),
    cpu: (used.user + used.system) / CALLS,
    wall,
  };
}

async function compare(calls: Record<Side, Call>, inFlight: number) {
  const pooled: Record<Side, number[]> = { raw: [], hub: [] };
  const blocks: Record<Side, Block[]> = { raw: [], hub: [] };
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which goes first, so neither always runs on a warmer or a busier machine.
    const order: Side[] = round % 2 === 0 ? ["raw", "hub"] : ["hub", "raw"];
    for (const side of order) blocks[side].push(await block(calls[side], inFlight, pooled[side]));
  }
  const ratios = (f: (b: Block) => number) => blocks.hub.map((h, i) => f(h) / f(blocks.raw[i]!));
  const side = (s: Side) => {
    const all = sorted(pooled[s]);
    const wall = blocks[s].reduce((t, b) => t + b.wall, 0);
    const cpu = blocks[s].reduce((t, b) => t + b.cpu, 0) / ROUNDS;
    return {
      median_ms: round3(percentile(all, 0.5)),
      p99_ms: round3(percentile(all, 0.99)),
      calls_per_s: Math.round((all.length / wall) * 1000),
      client_cpu_us_per_call: Math.round(cpu * 10) / 10,
    };
  };
  return {
    rounds: ROUNDS,
    calls_per_round: CALLS,
    // Pooled over all rounds, for scale; the ratios below are per round.
    raw: side("raw"),
    hub: side("hub"),
    ratio_median: spread(ratios((b) => b.median)),
    ratio_p99: spread(ratios((b) => b.p99)),
    ratio_client_cpu: spread(ratios((b) => b.cpu)),
    ratio_wall: spread(ratios((b) => b.wall)),
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

  const calls: Record<Side, Call> = {
    raw: async (i) => {
      const r = await client.callTool({ name: "add", arguments: { a: i, b: 1 } });
      if (r.isError) throw new Error("raw call failed");
    },
    hub: async (i) => {
      const v = await hub.call("math.add", { a: i, b: 1 });
      if (v !== i + 1) throw new Error(`hub returned ${String(v)}`);
    },
  };

  // Warm-up, alternating in small blocks, both ways of calling: V8 optimises the hub's longer path later
  // than the raw one, and an unoptimised first round would count against it.
  for (let done = 0; done < WARMUP; done += 250) {
    for (const inFlight of [1, IN_FLIGHT])
      for (const side of ["raw", "hub"] as const) await run(calls[side], 250, inFlight, []);
  }
  recorded = 0;

  const sequential = await compare(calls, 1);
  const concurrent = await compare(calls, IN_FLIGHT);
  const callsThroughHub = recorded;

  // The original design: start a process, initialise, call once, stop.
  const spawnLat: number[] = [];
  for (let i = 0; i < SPAWN_CALLS; i++) {
    const t = performance.now();
    const c = new Client({ name: "bench-spawn", version: "0" });
    await c.connect(new StdioClientTransport({ command: process.execPath, args: [MATH], stderr: "ignore" }));
    await c.callTool({ name: "add", arguments: { a: i, b: 1 } });
    await c.close();
    spawnLat.push(performance.now() - t);
  }
  const spawnSorted = sorted(spawnLat);

  await hub.close();
  await client.close();

  // The target: the hub within 1.2x raw for median and p99 latency, alone and 16 in flight.
  const checks = [sequential, concurrent].flatMap((c) => [c.ratio_median.median, c.ratio_p99.median]);
  process.stdout.write(
    `${JSON.stringify(
      {
        bench: "hub",
        server: "math.add over stdio",
        node: process.version,
        loadavg_1m: round2(loadavg()[0]!),
        sequential,
        concurrent_16_in_flight: concurrent,
        spawn_per_call: {
          calls: SPAWN_CALLS,
          median_ms: round3(percentile(spawnSorted, 0.5)),
          max_ms: round3(spawnSorted.at(-1)!),
          vs_hub_sequential_median: Math.round(percentile(spawnSorted, 0.5) / sequential.hub.median_ms),
        },
        records_emitted: callsThroughHub,
        target_ratio: TARGET,
        target: "median per-round hub/raw ratio of median and of p99 latency, sequential and 16 in flight",
        target_met: checks.every((r) => r <= TARGET),
      },
      null,
      2,
    )}\n`,
  );
}

await main();
