/**
 * What one sandbox engine costs in RSS. Each engine is a worker thread (its own V8 isolate and Node
 * environment) with one QuickJS WebAssembly instance. Prints JSON:
 * - per_engine_kb: RSS added per engine with `--engines` steps parked at once on a tool call (each holds its
 *   engine), against one parked step, in the same process;
 * - wasm_touched_kb_per_engine: of that, the engines' WebAssembly memory actually touched (anonymous mappings
 *   of the engine's memory size);
 * - bare_thread_kb: a worker thread that loads the engine's modules and nothing else, for the thread and
 *   Node-environment part;
 * - worker_heap_kb: that thread's V8 heap spaces (physical size).
 *
 *   node --expose-gc dist/bench/sandbox-engines.js [--engines 16]
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { InProcessToolHost, runCode } from "../action/index.js";
import { BASE_BYTES, trimIdle } from "../action/engine.js";
import { SandboxLimits } from "../config/index.js";
import { distPath } from "../core/index.js";

const { values } = parseArgs({ options: { engines: { type: "string", default: "16" } } });
const N = Number(values.engines);
const limits = SandboxLimits.parse({ timeout_ms: 600_000 });
const settle = () => new Promise((r) => setTimeout(r, 300));

function rssKb(): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0);
}

/** RSS (kB) of anonymous read-write mappings exactly the size of an engine's base memory. */
function wasmKb(): number {
  let kb = 0;
  let match = false;
  for (const line of readFileSync("/proc/self/smaps", "utf8").split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) rw-p \S+ \S+ 0\s*$/.exec(line);
    if (head) match = parseInt(head[2]!, 16) - parseInt(head[1]!, 16) === BASE_BYTES;
    else if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) match = false;
    const rss = /^Rss:\s+(\d+)/.exec(line);
    if (rss && match) kb += Number(rss[1]);
  }
  return kb;
}

/** RSS and wasm kB with `n` steps parked on a tool call at once. */
async function parked(n: number): Promise<{ rss: number; wasm: number }> {
  let waiting = 0;
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const host = new InProcessToolHost([
    {
      server: "t",
      name: "park",
      handler: async () => {
        waiting++;
        await gate;
        return 1;
      },
    },
  ]);
  const code = "const a = []; for (let i = 0; i < 1000; i++) a.push({ i }); return await park()";
  const steps = Array.from({ length: n }, () => runCode(code, host, limits));
  while (waiting < n) await new Promise((r) => setTimeout(r, 20));
  await settle();
  const out = { rss: rssKb(), wasm: wasmKb() };
  open();
  for (const r of await Promise.all(steps))
    if (!r.ok) throw new Error(`a parked step failed: ${r.error?.message}`);
  trimIdle(Date.now() + 1);
  return out;
}

/** RSS kB per worker thread that loads what an engine's thread loads, and one thread's V8 heap spaces. */
async function bareThreads(n: number) {
  const src = [
    `await import(${JSON.stringify(pathToFileURL(distPath("action/vm.js")).href)});`,
    ...["quickjs-emscripten-core", "@jitl/quickjs-wasmfile-release-sync"].map(
      (m) => `await import(${JSON.stringify(import.meta.resolve(m))});`,
    ),
    'const { parentPort } = await import("node:worker_threads"); const v8 = await import("node:v8");',
    "parentPort.postMessage(Object.fromEntries(v8.getHeapSpaceStatistics().filter((s) => s.physical_space_size)",
    "  .map((s) => [s.space_name, Math.round(s.physical_space_size / 1024)])));",
    "setInterval(() => {}, 1 << 30);",
  ].join("\n");
  const url = new URL(`data:text/javascript,${encodeURIComponent(src)}`);
  await settle();
  const before = rssKb();
  const workers: Worker[] = [];
  let heap: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const w = new Worker(url, { resourceLimits: { stackSizeMb: 1 } });
    workers.push(w);
    heap = await new Promise((r) => w.once("message", r));
  }
  await settle();
  const kb = Math.round((rssKb() - before) / n);
  await Promise.all(workers.map((w) => w.terminate()));
  return { kb, heap };
}

await runCode("return 1", new InProcessToolHost([]), limits); // the module compiled, the code warm
trimIdle(Date.now() + 1);
global.gc?.();
await settle();
const one = await parked(1);
global.gc?.();
await settle();
const many = await parked(N);
const bare = await bareThreads(N);
process.stdout.write(
  `${JSON.stringify(
    {
      bench: "sandbox-engines",
      engines: N,
      per_engine_kb: Math.round((many.rss - one.rss) / (N - 1)),
      wasm_touched_kb_per_engine: Math.round((many.wasm - one.wasm) / (N - 1)),
      bare_thread_kb: bare.kb,
      worker_heap_kb: bare.heap,
      rss_mb: { one_parked: Math.round(one.rss / 1024), all_parked: Math.round(many.rss / 1024) },
    },
    null,
    2,
  )}\n`,
);
