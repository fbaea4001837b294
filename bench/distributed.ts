/**
 * Batch on queue workers: wall time of `pda batch --queue` with 1, 2 and 4 `pda worker` processes of
 * concurrency 8 against the ideal (model time / total concurrency), and the per-query overhead of the queue
 * path against a local `pda batch --concurrency 8` of the same queries in the same run. Every model call
 * takes a simulated latency (the fake Gemini server, in its own process); a real redis-server on a free
 * port; every pda a real process with its own store and math server. Prints JSON.
 *
 *   node dist/bench/distributed.js [--queries 400] [--latency 200] [--workers 1,2,4] [--concurrency 8]
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

function pda(args: string[], env: NodeJS.ProcessEnv): Proc {
  const child = spawn(process.execPath, [MAIN, ...args], { env, stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return { child, stderr: () => err, exit };
}

/** Resident memory of a process and its children (a worker with its MCP servers), in MB. */
function treeRssMb(pid: number): number {
  const rss = (p: number) => {
    try {
      return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, "utf8"))?.[1] ?? 0);
    } catch {
      return 0;
    }
  };
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
  const walk = (p: number): number => rss(p) + children(p).reduce((s, c) => s + walk(c), 0);
  return Math.round(walk(pid) / 1024);
}

async function fakeModel(): Promise<{ url: string; stop(): void }> {
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
  return { url, stop: () => child.stdin!.end() };
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
    const p = pda(["batch", input, "--out", out, "--db", join(dir, `${name}.db`), ...extra], env);
    const code = await p.exit;
    const wall = performance.now() - t0;
    if (code !== 0) throw new Error(`${name}: exit ${code}\n${p.stderr()}`);
    const rows = parse(readFileSync(join(out, "test_queries_output.csv"), "utf8"), {
      columns: true,
    }) as Array<Record<string, string>>;
    const bad = rows.filter((r) => r.Status !== "succeeded" || r.Correct !== "true");
    if (rows.length !== n || bad.length)
      throw new Error(`${name}: ${rows.length}/${n} rows, ${bad.length} bad`);
    const calls = rows.reduce((s, r) => s + Number(r["LLM Calls"]), 0);
    return { wall, calls };
  };

  const workerRuns = [];
  try {
    const load0 = loadavg()[0]!;
    const local = await batch("local", ["--concurrency", String(concurrency)]);
    for (const w of values.workers.split(",").map(Number)) {
      const workers = Array.from({ length: w }, (_, i) =>
        pda(
          [
            "worker",
            "--queue",
            redis.url,
            "--db",
            join(dir, `w${w}-${i}.db`),
            "--concurrency",
            String(concurrency),
          ],
          env,
        ),
      );
      const deadline = Date.now() + 60_000;
      while (!workers.every((p) => /waiting for jobs/.test(p.stderr()))) {
        if (Date.now() > deadline)
          throw new Error(`workers not ready:\n${workers.map((p) => p.stderr()).join("\n")}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      // The run's --concurrency is the model calls in flight the workers share: all of theirs here.
      const r = await batch(`queue-${w}`, ["--queue", redis.url, "--concurrency", String(w * concurrency)]);
      const memory = workers.map((p) => treeRssMb(p.child.pid!));
      for (const p of workers) p.child.kill("SIGTERM");
      await Promise.all(workers.map((p) => p.exit));
      const ideal = (r.calls * latency) / (w * concurrency);
      workerRuns.push({
        workers: w,
        concurrency_each: concurrency,
        wall_ms: Math.round(r.wall),
        ideal_ms: Math.round(ideal),
        ratio: +(r.wall / ideal).toFixed(3),
        queries_per_s: +((n / r.wall) * 1000).toFixed(2),
        rss_mb_per_worker_with_servers: memory,
        ...(w === 1 ? { overhead_ms_per_query_vs_local: +((r.wall - local.wall) / n).toFixed(2) } : {}),
      });
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
        "total concurrency; overhead = (queue wall with 1 worker − local wall at the same concurrency) / queries",
      local: {
        concurrency,
        wall_ms: Math.round(local.wall),
        ideal_ms: Math.round(localIdeal),
        ratio: +(local.wall / localIdeal).toFixed(3),
        queries_per_s: +((n / local.wall) * 1000).toFixed(2),
      },
      queue: workerRuns,
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
