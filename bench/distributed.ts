/**
 * Batch on queue workers: wall time of `pda batch --queue` with 1, 2 and 4 `pda worker` processes of
 * concurrency 8 against the ideal (model time / total concurrency), and the per-query overhead of the queue
 * path against a local `pda batch --concurrency 8` of the same queries in the same run. Every model call
 * takes a simulated latency (the fake Gemini server, in its own process); a real redis-server on a free
 * port; every pda a real process with its own store and math server. Prints JSON.
 *
 * CPU (utime + stime from /proc, so a loaded machine moves it far less than wall time) per query of the queue
 * path: the workers with their MCP servers from "waiting for jobs" to the run's end (start-up apart), Redis
 * over the run, and the submitting `pda batch` whole; beside it the local batch's whole process. The workers'
 * share is split into their main threads, their other threads (the sandbox's) and their MCP servers. The fake
 * model server's CPU is printed apart and in no total (it stands for a remote API), as it takes its share of
 * this machine's cores.
 * `--prof DIR` writes V8 CPU profiles of each worker and each `pda batch` there (node --cpu-prof).
 *
 * Then the most workers once more, each node started with `--worker-node-options` (default `--v8-pool-size=1`, the
 * README's setting for several workers on one small host; "" skips this run): `queue_tuned`.
 *
 *   node dist/bench/distributed.js [--queries 400] [--latency 200] [--workers 1,2,4] [--concurrency 8]
 *                                  [--worker-node-options "--v8-pool-size=1"]
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { parse } from "csv-parse/sync";
import { distPath } from "../core/index.js";
import { startRedis } from "../performance/testing/redis.js";

const { values } = parseArgs({
  options: {
    queries: { type: "string", default: "400" },
    latency: { type: "string", default: "200" },
    workers: { type: "string", default: "1,2,4" },
    concurrency: { type: "string", default: "8" },
    prof: { type: "string" },
    "worker-node-options": { type: "string", default: "--v8-pool-size=1" },
  },
});
const n = Number(values.queries);
const latency = Number(values.latency);
const concurrency = Number(values.concurrency);
const MAIN = distPath("main.js");

interface Proc {
  child: ChildProcess;
  stderr: () => string;
  exit: Promise<number | null>;
}

function pda(args: string[], env: NodeJS.ProcessEnv, node: string[] = []): Proc {
  const child = spawn(process.execPath, [...node, MAIN, ...args], {
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return { child, stderr: () => err, exit };
}

const children = (p: number): number[] => {
  try {
    return readFileSync(`/proc/${p}/task/${p}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
};
const tree = (p: number): number[] => [p, ...children(p).flatMap(tree)];

/** Resident memory of a process and its children (a worker with its MCP servers), in MB. */
function treeRssMb(pid: number): number {
  const rss = (p: number) => {
    try {
      return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, "utf8"))?.[1] ?? 0);
    } catch {
      return 0;
    }
  };
  return Math.round(tree(pid).reduce((s, p) => s + rss(p), 0) / 1024);
}

/** /proc/<pid>/stat fields after the command name: [11] utime, [12] stime, [13] cutime, [14] cstime. */
function stat(pid: number | "self"): number[] {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    return text
      .slice(text.lastIndexOf(")") + 2)
      .split(" ")
      .map(Number);
  } catch {
    return []; // gone
  }
}
const TICK_MS = 10; // USER_HZ is 100 on Linux
/** CPU ms by pid of a process and everything under it, so a child that exits is not lost. */
function treeCpu(pid: number): Map<number, number> {
  return new Map(tree(pid).map((p) => [p, ((stat(p)[11] ?? 0) + (stat(p)[12] ?? 0)) * TICK_MS]));
}
/** CPU ms of a process's main thread alone (its worker threads apart: the sandbox's, libuv's). */
function mainThreadCpu(pid: number): number {
  try {
    const text = readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8");
    const f = text
      .slice(text.lastIndexOf(")") + 2)
      .split(" ")
      .map(Number);
    return ((f[11] ?? 0) + (f[12] ?? 0)) * TICK_MS;
  } catch {
    return 0;
  }
}
function cpuSince(before: Map<number, number>, after: Map<number, number>): number {
  return [...after].reduce((sum, [pid, ms]) => sum + ms - (before.get(pid) ?? 0), 0);
}
/** CPU ms of this process's children that have exited and been waited for (a finished `pda batch`). */
function reapedCpu(): number {
  const f = stat("self");
  return ((f[13] ?? 0) + (f[14] ?? 0)) * TICK_MS;
}

async function fakeModel(): Promise<{ url: string; pid: number; stop(): void }> {
  const child = spawn(
    process.execPath,
    [distPath("bench/batch.js"), "--serve", "--latency", String(latency)],
    {
      stdio: ["pipe", "pipe", "inherit"],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", (l) => resolve(l.trim()));
    child.once("exit", (code) => reject(new Error(`fake server exited (${code})`)));
  });
  return { url, pid: child.pid!, stop: () => child.stdin!.end() };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "pda-bench-dist-"));
  const model = await fakeModel();
  const redis = await startRedis();
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: dir,
    NO_COLOR: "1",
    GEMINI_API_KEY: "bench-key",
    GEMINI_BASE_URL: model.url,
  };
  const input = join(dir, "queries.jsonl");
  writeFileSync(
    input,
    Array.from({ length: n }, (_, i) =>
      JSON.stringify({ query: `What is ${i + 1} + ${2 * i}?`, expected: String(3 * i + 1) }),
    ).join("\n"),
  );

  /** One `pda batch` to the end: its wall time and the model calls its rows made. */
  const batch = async (name: string, extra: string[]) => {
    const out = join(dir, name);
    const t0 = performance.now();
    const cpu0 = reapedCpu();
    const modelCpu0 = treeCpu(model.pid);
    const prof = values.prof ? ["--cpu-prof", "--cpu-prof-dir", join(values.prof, name)] : [];
    const p = pda(["batch", input, "--out", out, "--db", join(dir, `${name}.db`), ...extra], env, prof);
    const code = await p.exit;
    const wall = performance.now() - t0;
    // Only this child exits in the window (the workers and their servers live on), so the delta is its own.
    const cpuMs = reapedCpu() - cpu0;
    const modelMs = cpuSince(modelCpu0, treeCpu(model.pid));
    if (code !== 0) throw new Error(`${name}: exit ${code}\n${p.stderr()}`);
    const rows = parse(readFileSync(join(out, "test_queries_output.csv"), "utf8"), {
      columns: true,
    }) as Array<Record<string, string>>;
    const bad = rows.filter((r) => r.Status !== "succeeded" || r.Correct !== "true");
    if (rows.length !== n || bad.length)
      throw new Error(`${name}: ${rows.length}/${n} rows, ${bad.length} bad`);
    const calls = rows.reduce((s, r) => s + Number(r["LLM Calls"]), 0);
    return { wall, calls, cpuMs, modelMs };
  };

  /** `w` workers (each node started with `nodeArgs`) and one `pda batch --queue` over them, to the end. */
  const runWorkers = async (w: number, nodeArgs: string[], label: string, local: { wall: number }) => {
    const workers = Array.from({ length: w }, (_, i) =>
      pda(
        [
          "worker",
          "--queue",
          redis.url,
          "--db",
          join(dir, `${label}-${i}.db`),
          "--concurrency",
          String(concurrency),
        ],
        env,
        [
          ...nodeArgs,
          ...(values.prof ? ["--cpu-prof", "--cpu-prof-dir", join(values.prof, `${label}-${i}`)] : []),
        ],
      ),
    );
    const deadline = Date.now() + 60_000;
    while (!workers.every((p) => /waiting for jobs/.test(p.stderr()))) {
      if (Date.now() > deadline)
        throw new Error(`workers not ready:\n${workers.map((p) => p.stderr()).join("\n")}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const workersCpu0 = workers.map((p) => treeCpu(p.child.pid!));
    const mainCpu0 = workers.map((p) => mainThreadCpu(p.child.pid!));
    const redisCpu0 = treeCpu(redis.proc.pid!);
    // The run's --concurrency is the model calls in flight the workers share: all of theirs here.
    const r = await batch(`queue-${label}`, ["--queue", redis.url, "--concurrency", String(w * concurrency)]);
    const workersMs = workers.reduce((s, p, i) => s + cpuSince(workersCpu0[i]!, treeCpu(p.child.pid!)), 0);
    // The split of the workers' CPU: their main threads, their other threads, their MCP servers.
    const mainMs = workers.reduce((s, p, i) => s + mainThreadCpu(p.child.pid!) - mainCpu0[i]!, 0);
    const ownMs = workers.reduce(
      (s, p, i) =>
        s + (treeCpu(p.child.pid!).get(p.child.pid!) ?? 0) - (workersCpu0[i]!.get(p.child.pid!) ?? 0),
      0,
    );
    const redisMs = cpuSince(redisCpu0, treeCpu(redis.proc.pid!));
    const memory = workers.map((p) => treeRssMb(p.child.pid!));
    for (const p of workers) p.child.kill("SIGTERM");
    await Promise.all(workers.map((p) => p.exit));
    const ideal = (r.calls * latency) / (w * concurrency);
    return {
      workers: w,
      ...(nodeArgs.length ? { worker_node_options: nodeArgs.join(" ") } : {}),
      concurrency_each: concurrency,
      wall_ms: Math.round(r.wall),
      ideal_ms: Math.round(ideal),
      ratio: +(r.wall / ideal).toFixed(3),
      queries_per_s: +((n / r.wall) * 1000).toFixed(2),
      rss_mb_per_worker_with_servers: memory,
      cpu_ms_per_query: {
        workers_with_servers: +(workersMs / n).toFixed(1),
        workers_split: {
          main_thread: +(mainMs / n).toFixed(1),
          other_threads: +((ownMs - mainMs) / n).toFixed(1),
          servers: +((workersMs - ownMs) / n).toFixed(1),
        },
        redis: +(redisMs / n).toFixed(1),
        submitter: +(r.cpuMs / n).toFixed(1),
        total: +((workersMs + redisMs + r.cpuMs) / n).toFixed(1),
        /** Not in `total` (it stands for the remote model API), but it shares this machine's cores. */
        fake_model_server: +(r.modelMs / n).toFixed(1),
      },
      ...(w === 1 && !nodeArgs.length
        ? { overhead_ms_per_query_vs_local: +((r.wall - local.wall) / n).toFixed(2) }
        : {}),
    };
  };

  const workerRuns = [];
  const tunedRuns = [];
  try {
    const load0 = loadavg()[0]!;
    const local = await batch("local", ["--concurrency", String(concurrency)]);
    const counts = values.workers.split(",").map(Number);
    for (const w of counts) workerRuns.push(await runWorkers(w, [], `w${w}`, local));
    // Several workers on one small host, with the setting the README gives for that case.
    const tuned = values["worker-node-options"].split(" ").filter(Boolean);
    if (tuned.length) {
      const w = Math.max(...counts);
      tunedRuns.push(await runWorkers(w, tuned, `w${w}-tuned`, local));
    }
    const localIdeal = (local.calls * latency) / concurrency;
    const four = workerRuns.find((x) => x.workers === 4);
    const one = workerRuns.find((x) => x.workers === 1);
    const out = {
      bench: "distributed",
      queries: n,
      model_latency_ms: latency,
      note:
        "wall = whole `pda batch` process (start, enqueue, wait, adopt, CSVs); ideal = model calls × latency / " +
        "total concurrency; overhead = (queue wall with 1 worker − local wall at the same concurrency) / queries; " +
        "CPU: workers with their servers from ready to the run's end, Redis over the run, the submitter whole",
      local: {
        concurrency,
        wall_ms: Math.round(local.wall),
        ideal_ms: Math.round(localIdeal),
        ratio: +(local.wall / localIdeal).toFixed(3),
        queries_per_s: +((n / local.wall) * 1000).toFixed(2),
        /** The whole `pda batch` process with its servers, start-up included. */
        cpu_ms_per_query: +(local.cpuMs / n).toFixed(1),
        fake_model_server_cpu_ms_per_query: +(local.modelMs / n).toFixed(1),
      },
      queue: workerRuns,
      /** The most workers again, each node given `--worker-node-options` (the README's setting for many per host). */
      queue_tuned: tunedRuns,
      load_avg_1m: {
        start: +load0.toFixed(2),
        end: +loadavg()[0]!.toFixed(2),
        cores: availableParallelism(),
      },
      target: { ratio_at_4_workers: 1.2, overhead_ms_per_query: 5 },
      meets_target:
        four !== undefined &&
        one !== undefined &&
        four.ratio <= 1.2 &&
        (one.overhead_ms_per_query_vs_local ?? Infinity) <= 5,
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    await redis.stop();
    model.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
