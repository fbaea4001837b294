/**
 * What the CODE sandbox costs. Prints JSON:
 * - fresh_context: a whole trivial step (`return 1`) with 50 tools bound — engine reuse, the warm context set
 *   to the step, code compile, the memory image written back — beside a bare QuickJS runtime+context+eval;
 * - calls_1000: 1000 sequential tool calls made by sandbox code vs the same 1000 calls from plain host code,
 *   against the same math server over stdio (MultiMCP), rounds interleaved, the ratio the median of the
 *   rounds' own ratios; target ratio ≤ 1.3;
 * - the same with the zero-latency in-process host, which isolates the sandbox's own cost per call;
 * - cancel_spinning_step: ms from AbortSignal.abort() (Ctrl-C) to runCode's result for a step spinning in
 *   `while (true) {}`, median of 20;
 * - pool_after_heavy_burst: the idle engine pool's size and memory after 16 concurrent heavy steps, and the
 *   process's RSS before, after the burst and once the pool is trimmed (as after the idle timeout).
 *
 *   node --expose-gc dist/bench/sandbox.js [--runs 200] [--rounds 31] [--calls 1000]
 */
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { InProcessToolHost, mathTools, runCode, type InProcessTool } from "../action/index.js";
import releaseSyncModule from "@jitl/quickjs-wasmfile-release-sync";
import { newQuickJSWASMModuleFromVariant, type QuickJSSyncVariant } from "quickjs-emscripten-core";
import { enginesCreated, idleEngines, trimIdle } from "../action/engine.js";
import { SandboxLimits } from "../config/index.js";
import { distPath, type ToolHost } from "../core/index.js";
import { MultiMCP } from "../mcp_servers/index.js";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "200" },
    rounds: { type: "string", default: "31" },
    calls: { type: "string", default: "1000" },
  },
});
const runs = Number(values.runs);
const releaseSync = releaseSyncModule as unknown as QuickJSSyncVariant;
const rounds = Number(values.rounds);
const calls = Number(values.calls);

const limits = SandboxLimits.parse({ timeout_ms: 600_000, max_tool_calls: 1_000_000 });

function stats(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { median: round(at(0.5)), p10: round(at(0.1)), p90: round(at(0.9)) };
}

function round(x: number, digits = 3): number {
  return Number(x.toFixed(digits));
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

async function freshContext() {
  const tools: InProcessTool[] = Array.from({ length: 50 }, (_, i) => ({
    server: `s${i % 5}`,
    name: `tool_${i}`,
    inputSchema: {
      type: "object",
      properties: { a: { type: "number" }, b: { type: "string", default: "x" } },
      required: ["a"],
    },
    handler: () => i,
  }));
  const host = new InProcessToolHost(tools);
  const step = async () => {
    const r = await runCode("return 1", host, limits);
    if (!r.ok) throw new Error(`bench step failed: ${JSON.stringify(r.error)}`);
  };
  // QuickJS alone, on this thread: what a runtime and context cost without the sandbox around them.
  const quickjs = await newQuickJSWASMModuleFromVariant(releaseSync);
  const bare = async () => {
    const rt = quickjs.newRuntime();
    const ctx = rt.newContext();
    ctx.evalCode("1").dispose();
    ctx.dispose();
    rt.dispose();
  };
  for (let i = 0; i < 20; i++) {
    await step();
    await bare();
  }
  const stepMs: number[] = [];
  const bareMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    stepMs.push(await time(step));
    bareMs.push(await time(bare));
  }
  return { tools_bound: 50, runs, step_ms: stats(stepMs), bare_quickjs_context_ms: stats(bareMs) };
}

/**
 * Median times of `calls` sequential add calls, host loop vs sandbox loop, interleaved round by round. The
 * sandbox figure is a whole step (fresh context included); a trivial step's median on the same host is also
 * taken off to show the cost of the calls alone.
 */
async function callRounds(host: ToolHost) {
  const hostLoop = async () => {
    let s = 0;
    for (let i = 0; i < calls; i++) s = (await host.call("math.add", { a: s, b: 1 })) as number;
    if (s !== calls) throw new Error(`host loop summed ${s}`);
  };
  const code = `let s = 0;\nfor (let i = 0; i < ${calls}; i++) s = await add(s, 1);\nreturn s`;
  const sandboxLoop = async () => {
    const r = await runCode(code, host, limits);
    if (r.value !== calls) throw new Error(`sandbox loop: ${JSON.stringify(r.error ?? r.value)}`);
  };
  // Warm until V8 has optimised both paths (the sandbox's is longer and tiers up later).
  for (let i = 0; i < 3; i++) {
    await hostLoop();
    await sandboxLoop();
  }
  const setup: number[] = [];
  for (let i = 0; i < 30; i++) setup.push(await time(() => runCode("return 1", host, limits)));
  const setupMs = stats(setup).median;
  const hostMs: number[] = [];
  const sandboxMs: number[] = [];
  for (let r = 0; r < rounds; r++) {
    // Alternate which goes first so drift in machine load hits both alike.
    if (r % 2 === 0) {
      hostMs.push(await time(hostLoop));
      sandboxMs.push(await time(sandboxLoop));
    } else {
      sandboxMs.push(await time(sandboxLoop));
      hostMs.push(await time(hostLoop));
    }
  }
  const h = stats(hostMs);
  const s = stats(sandboxMs);
  // Each round's two runs are adjacent in time, so their ratio cancels most drift in machine load; the
  // figure is the median of those ratios, with their spread.
  const pairs = stats(sandboxMs.map((x, i) => x / hostMs[i]!));
  return {
    calls,
    rounds,
    host_ms: h,
    sandbox_ms: s,
    trivial_step_ms: setupMs,
    ratio: pairs.median,
    ratio_p10: pairs.p10,
    ratio_p90: pairs.p90,
    ratio_calls_only: round((s.median - setupMs) / h.median),
    sandbox_overhead_us_per_call: round(((s.median - setupMs - h.median) / calls) * 1000, 1),
  };
}

/**
 * A burst of 16 concurrent heavy steps (each grows its engine by ~40 MB), then what the idle pool keeps:
 * WebAssembly memory never shrinks, so the pool's cap on grown bytes is what gives memory back.
 */
async function poolAfterBurst() {
  const mb = (b: number) => round(b / (1 << 20), 1);
  const rssBefore = process.memoryUsage().rss;
  const heavy = "const a = new Uint8Array(40 << 20); a[1] = 1; return a.length";
  const results = await Promise.all(
    Array.from({ length: 16 }, () => runCode(heavy, new InProcessToolHost([]), limits)),
  );
  if (results.some((r) => !r.ok)) throw new Error("a heavy bench step failed");
  const pool = idleEngines();
  const rssAfter = process.memoryUsage().rss;
  trimIdle(Date.now() + 1);
  // What the process holds once the pool is trimmed (the idle timeout's effect): engines torn down in other
  // threads go over some time, so sample (after a GC) until it stops falling, for up to 5 s.
  let rssIdle = process.memoryUsage().rss;
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 250));
    (globalThis as { gc?: () => void }).gc?.();
    const now = process.memoryUsage().rss;
    const falling = rssIdle - now > 1 << 20;
    rssIdle = Math.min(rssIdle, now);
    if (!falling && i >= 3) break;
  }
  return {
    steps: 16,
    idle_engines: pool.count,
    idle_mb: mb(pool.bytes),
    after_trim_engines: idleEngines().count,
    rss_mb: { before: mb(rssBefore), after_burst: mb(rssAfter), after_trim_idle: mb(rssIdle) },
  };
}

/** How long a cancel takes to end a step that spins without awaiting (Ctrl-C's path). */
async function cancelSpinning() {
  const host = new InProcessToolHost(mathTools());
  const ms: number[] = [];
  let cancelled = 0;
  for (let i = 0; i < 20; i++) {
    const ac = new AbortController();
    const step = runCode("await add(1, 2);\nconsole.log('spinning');\nwhile (true) {}", host, limits, {
      signal: ac.signal,
      onLog: () => {
        // The code is past its last await: it spins from here. Abort on the next turn of this thread's loop,
        // which a step on this thread would never give back.
        setTimeout(() => {
          t = performance.now();
          ac.abort();
        }, 1);
      },
    });
    let t = 0;
    const r = await step;
    ms.push(performance.now() - t);
    if (r.error?.code === "SANDBOX_CANCELLED") cancelled++;
  }
  return { steps: 20, cancelled, cancel_ms: stats(ms) };
}

const cancel = await cancelSpinning();
const burst = await poolAfterBurst();
const fresh = await freshContext();
const inProcess = await callRounds(new InProcessToolHost(mathTools()));
const hub = await MultiMCP.start({
  servers: [{ id: "math", command: process.execPath, args: [distPath("mcp_servers/math/server.js")] }],
});
let stdio;
try {
  stdio = await callRounds(hub);
} finally {
  await hub.close();
}

process.stdout.write(
  `${JSON.stringify(
    {
      bench: "sandbox",
      node: process.version,
      load_avg_1m: round(loadavg()[0]!, 2),
      fresh_context: fresh,
      calls_stdio_math_server: { ...stdio, target_ratio: 1.3, meets_target: stdio.ratio <= 1.3 },
      calls_in_process_host: inProcess,
      engines_created: enginesCreated(),
      cancel_spinning_step: cancel,
      pool_after_heavy_burst: burst,
    },
    null,
    2,
  )}\n`,
);
