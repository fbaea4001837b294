/**
 * Batch throughput: wall time of a query set at concurrency 1, 4 and 16 against the ideal (total model time /
 * concurrency), with every model call taking a simulated 200 ms. Each query is a real session: the real
 * @google/genai client against the fake Gemini server (run in a child process, so its work does not share
 * this process's event loop), the real loop, sandbox, the bundled servers of config/mcp_server_config.yaml
 * over stdio (`--servers math`: only math; lists cached, so each starts at its first call, as with
 * `pda batch`) and SQLite store. Prints JSON.
 *
 *   node dist/bench/batch.js [--queries 200] [--queries-c1 50] [--latency 200] [--repeat 3] [--servers math]
 *
 * Memory and CPU count the servers too: RSS is summed over this process and every process under it (the
 * servers and what they start), sampled every 100 ms, leaving out the fake model server, after a full garbage
 * collection before each run (as a fresh `pda batch` process would start); CPU per query is this
 * process's plus the servers' (utime + stime from /proc). Beside it, in the same run, the baseline: a plain
 * HTTP client sending the very request bodies the last concurrency-16 run sent, at concurrency 16, twice each
 * way (fetch, and node:http on keep-alive sockets), the cheaper kept.
 * "Overhead" is pda's CPU per query minus the baseline's and minus the servers' (the tools); the target
 * figure, `overhead_beyond_sandbox_ms_per_query`, also leaves out the sandbox's engine threads (their CPU read
 * from /proc by action's sandboxCpuMs), which process.cpuUsage counts with this process.
 *
 * Concurrency 1 runs fewer queries by default (50 × 0.6 s = 30 s instead of 2 min); its ratio is computed
 * against the ideal for the queries it ran. Concurrency 16 is run `--repeat` times and its median ratio
 * is the figure compared with the target (a shared machine's load moves single runs a lot); the load
 * average is printed beside it.
 */
import { spawn } from "node:child_process";
import {
  appendFileSync,
  closeSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { request as httpRequest } from "node:http";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { enginesCreated } from "../action/engine.js";
import { sandboxCpuMs } from "../action/index.js";
import { AgentLoop, type LoopDeps } from "../agent/index.js";
import { Profile } from "../config/index.js";
import { distPath } from "../core/index.js";
import { DEFAULT_RETRY, createProvider } from "../llm/index.js";
import { MultiMCP, loadHubConfig } from "../mcp_servers/index.js";
import { SessionStore } from "../memory/index.js";
import { BATCH_GROUP_COMMIT_MS, runBatch } from "../performance/index.js";
import { fakeAgent } from "../performance/testing/fake-agent.js";
import { startFakeGemini } from "../testing/index.js";

const { values } = parseArgs({
  options: {
    queries: { type: "string", default: "200" },
    "queries-c1": { type: "string", default: "50" },
    latency: { type: "string", default: "200" },
    repeat: { type: "string", default: "3" },
    serve: { type: "boolean", default: false },
    record: { type: "string" },
    servers: { type: "string", default: "bundled" },
  },
});
const latency = Number(values.latency);

if (values.serve) {
  // The fake model server, in its own process: prints its URL, serves until stdin closes.
  // Each request's model and body, one JSON line each, for the plain-client baseline to send again.
  const agent = fakeAgent({ delayMs: latency });
  const g = await startFakeGemini({
    handler: (req) => {
      if (values.record)
        appendFileSync(values.record, `${JSON.stringify({ model: req.model, body: req.body })}\n`);
      return agent(req);
    },
  });
  process.stdout.write(`${g.url}\n`);
  process.stdin.resume();
  process.stdin.on("end", () => void g.close().then(() => process.exit(0)));
} else {
  await main();
}

async function startServer(record: string): Promise<{ url: string; pid: number; stop(): void }> {
  const child = spawn(
    process.execPath,
    [distPath("bench/batch.js"), "--serve", "--latency", String(latency), "--record", record],
    {
      stdio: ["pipe", "pipe", "inherit"],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once("line", (line) => resolve(line.trim()));
    child.once("exit", (code) => reject(new Error(`fake server exited (${code})`)));
    setTimeout(() => reject(new Error("fake server did not start in 60 s")), 60_000).unref();
  });
  return { url, pid: child.pid!, stop: () => child.stdin!.end() };
}

/** /proc/<pid>/stat fields after the command name; [1] is ppid, [11] utime, [12] stime (clock ticks). */
function stat(pid: number): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    return text.slice(text.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined; // gone
  }
}

/** A process's children, from the kernel's list (no scan of /proc: the sampler runs inside the measured process). */
function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return []; // gone
  }
}

/** This process's descendants, leaving out `skip` and what is under it. */
function descendants(skip: number): number[] {
  const out: number[] = [];
  const queue = children(process.pid);
  while (queue.length) {
    const pid = queue.shift()!;
    if (pid === skip) continue;
    out.push(pid);
    queue.push(...children(pid));
  }
  return out;
}

function rssKb(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** CPU ms of the servers (every descendant but the fake model server), by pid, so exits are not lost. */
function serverCpu(skip: number): Map<number, number> {
  return new Map(
    descendants(skip).map((pid) => {
      const f = stat(pid);
      return [pid, f ? ((Number(f[11]) + Number(f[12])) * 1000) / 100 : 0];
    }),
  );
}
function cpuSince(before: Map<number, number>, after: Map<number, number>): number {
  return [...after].reduce((sum, [pid, ms]) => sum + ms - (before.get(pid) ?? 0), 0);
}

/**
 * Peak of this process's RSS plus its servers', sampled while a run goes. The sampling's own CPU is counted
 * (`cpuMs`) so that the run's CPU can leave it out: it is the bench's, not pda's.
 */
function treeRss(skip: number): { stop(): { peakMb: number; cpuMs: number } } {
  let peak = 0;
  let cpuUs = 0;
  const sample = () => {
    const c0 = process.cpuUsage();
    const kb = rssKb(process.pid) + descendants(skip).reduce((n, pid) => n + rssKb(pid), 0);
    peak = Math.max(peak, kb);
    const c = process.cpuUsage(c0);
    cpuUs += c.user + c.system;
  };
  sample();
  const timer = setInterval(sample, 100);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      return { peakMb: Math.round(peak / 1024), cpuMs: cpuUs / 1000 };
    },
  };
}

/**
 * The recorded request bodies of a run: the bytes `from`–`to` of the record file. A run notes only where its
 * requests are: the bodies (~50 MB a run at concurrency 16) kept in this process would count in its RSS.
 */
function recordedRequests(record: string, from: number, to: number): string[] {
  const bytes = Buffer.alloc(to - from);
  const fd = openSync(record, "r");
  try {
    readSync(fd, bytes, 0, bytes.length, from);
  } finally {
    closeSync(fd);
  }
  return bytes.toString("utf8").split("\n").filter(Boolean);
}

/** One model request as a plain client sends it: the response's text. */
type Send = (url: string, body: string) => Promise<string>;

// Functions, not constants: main() runs at the top of this module, before constants below it are set.
/** Node's fetch, as a short script would send it. */
async function viaFetch(url: string, body: string): Promise<string> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "x-goog-api-key": "bench-key" },
    body,
  });
  return res.text();
}

/** node:http on Node's keep-alive global agent: the cheapest plain client (what pda's SDKs are given). */
function viaNodeHttp(url: string, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const headers = {
      "content-type": "application/json",
      "x-goog-api-key": "bench-key",
      "content-length": Buffer.byteLength(body),
    };
    const req = httpRequest(url, { method: "POST", headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** A baseline: the recorded request bodies sent again at `concurrency`; CPU ms per query. */
async function plainClient(
  url: string,
  requests: string[],
  queries: number,
  concurrency: number,
  send: Send,
) {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const { model, body } = JSON.parse(requests[next++]!) as { model: string; body: unknown };
      const text = await send(
        `${url}/v1beta/models/${encodeURIComponent(model)}:generateContent`,
        JSON.stringify(body),
      );
      const answer = JSON.parse(text) as { candidates?: { content?: { parts?: { text?: string }[] } }[] };
      JSON.parse(answer.candidates?.[0]?.content?.parts?.[0]?.text ?? "null");
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const cpu = process.cpuUsage(cpu0);
  return {
    model_calls: requests.length,
    wall_ms: Math.round(performance.now() - t0),
    cpu_ms_per_query: +((cpu.user + cpu.system) / 1000 / queries).toFixed(1),
  };
}

type PlainRun = Awaited<ReturnType<typeof plainClient>>;

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "pda-bench-batch-"));
  const record = join(dir, "requests.jsonl");
  writeFileSync(record, "");
  const server = await startServer(record);
  const hubConfig =
    values.servers === "math"
      ? {
          servers: [
            { id: "math", command: process.execPath, args: [distPath("mcp_servers/math/server.js")] },
          ],
        }
      : loadHubConfig(distPath("../config/mcp_server_config.yaml"));
  // As `pda batch` after any earlier command: the tool lists are cached, so a server starts at its first call
  // and the batch runs only the servers its queries use.
  const cacheStore = SessionStore.open(join(dir, "cache.db"));
  const cache = cacheStore.toolLists();
  await (await MultiMCP.start(hubConfig, { cache })).close();
  const hub = await MultiMCP.start(hubConfig, { cache });
  const model = createProvider("gemini", {
    apiKey: "bench-key",
    baseUrl: server.url,
    retry: { ...DEFAULT_RETRY, max_retries: 0 },
  });
  const profile = Profile.parse({});

  const run = async (name: string, n: number, concurrency: number) => {
    const input = join(dir, `${name}.jsonl`);
    writeFileSync(
      input,
      Array.from({ length: n }, (_, i) =>
        JSON.stringify({ query: `What is ${i + 1} + ${2 * i}?`, expected: String(3 * i + 1) }),
      ).join("\n"),
    );
    gc();
    // As `pda batch` opens it.
    const store = SessionStore.open(join(dir, `${name}.db`), { groupCommitMs: BATCH_GROUP_COMMIT_MS });
    try {
      const engines0 = enginesCreated();
      const servers0 = serverCpu(server.pid);
      const rss = treeRss(server.pid);
      const requests0 = statSync(record).size;
      const cpu0 = process.cpuUsage();
      const sandbox0 = sandboxCpuMs();
      const lag = monitorEventLoopDelay({ resolution: 10 });
      lag.enable();
      const t0 = performance.now();
      const r = await runBatch(
        {
          input,
          out: join(dir, name),
          db: join(dir, `${name}.db`),
          model: "gemini (fake)",
          concurrency,
          hil: "policy:fail",
          memory: false,
        },
        {
          store,
          models: { perception: model, decision: model },
          profile,
          loop: (extra: Partial<LoopDeps>) =>
            new AgentLoop({ models: extra.models!, host: hub, recorder: store, profile, ...extra }),
        },
      );
      const wall = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      const sandboxMs = sandboxCpuMs() - sandbox0;
      const serversMs = cpuSince(servers0, serverCpu(server.pid));
      const sampler = rss.stop();
      const peakTreeMb = sampler.peakMb;
      lag.disable();
      // How long the model calls really took as the client saw them (the fake server shares the machine).
      const seen = store.db.prepare("SELECT sum(latency_ms) AS ms FROM llm_calls").get() as { ms: number };
      const bad = r.outcomes.filter((o) => o.status !== "succeeded" || !o.correct);
      if (r.outcomes.length !== n || bad.length) {
        throw new Error(`${name}: ${r.outcomes.length}/${n} rows, ${bad.length} not succeeded/correct`);
      }
      const calls = r.outcomes.reduce((s, o) => s + o.llm_calls, 0);
      const ideal = (calls * latency) / concurrency;
      // A query's model calls run one after another, so no schedule beats ceil(n / concurrency) queries back to
      // back on one slot: with 100 queries at 16, 7 queries of 3 calls, 1.12 × the ideal.
      const floor = Math.max(ideal, Math.ceil(n / concurrency) * (calls / n) * latency);
      return {
        concurrency,
        queries: n,
        model_calls: calls,
        wall_ms: Math.round(wall),
        ideal_ms: Math.round(ideal),
        ratio: +(wall / ideal).toFixed(3),
        /** Against the least wall time whole queries allow (see floor above). */
        floor_ms: Math.round(floor),
        ratio_vs_floor: +(wall / floor).toFixed(3),
        queries_per_s: +((n / wall) * 1000).toFixed(2),
        /** CPU of this process (runner, loop, sandbox, store, HTTP client) per query, the RSS sampler's apart. */
        cpu_ms_per_query: +(((cpu.user + cpu.system) / 1000 - sampler.cpuMs) / n).toFixed(1),
        sampler_cpu_ms_per_query: +(sampler.cpuMs / n).toFixed(2),
        /** The part of cpu_ms_per_query spent in the sandbox's engine threads (QuickJS). */
        sandbox_cpu_ms_per_query: +(sandboxMs / n).toFixed(1),
        /** CPU of the MCP servers (the tools) per query. */
        servers_cpu_ms_per_query: +(serversMs / n).toFixed(1),
        /** Peak RSS of this process and its servers together during this run. */
        peak_rss_mb_with_servers: peakTreeMb,
        requests: { from: requests0, to: statSync(record).size },
        /** Model call latency as observed by the client, and the ratio against that instead of the nominal. */
        observed_model_ms_per_call: Math.round(seen.ms / calls),
        ratio_vs_observed: +(wall / (seen.ms / concurrency)).toFixed(3),
        /** QuickJS engines the sandbox had to create (reuse keeps this low). */
        sandbox_engines_created: enginesCreated() - engines0,
        event_loop_delay_ms: {
          p50: +(lag.percentile(50) / 1e6).toFixed(1),
          p99: +(lag.percentile(99) / 1e6).toFixed(1),
        },
        rss_mb_so_far: Math.round(process.resourceUsage().maxRSS / 1024),
      };
    } finally {
      store.close();
    }
  };

  // A full collection before each run, so a run's peak RSS holds its own garbage, not the runs' before it in
  // this process (a `pda batch` is one run a process); without it V8 let the heap grow ~20–40 MB a run.
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  try {
    await run("warmup", 8, 4); // JIT, wasm, connections
    const load0 = loadavg()[0]!;
    const c1 = await run("c1", Number(values["queries-c1"]), 1);
    const c4 = await run("c4", Number(values.queries), 4);
    const c16 = [];
    for (let i = 0; i < Number(values.repeat); i++)
      c16.push(await run(`c16-${i}`, Number(values.queries), 16));
    const ratios = c16.map((r) => r.ratio).sort((a, b) => a - b);
    const median = ratios[Math.floor((ratios.length - 1) / 2)]!;
    const mid = <T>(xs: T[], key: (x: T) => number) =>
      xs.map(key).sort((a, b) => a - b)[(xs.length - 1) >> 1]!;
    const peak = Math.round(process.resourceUsage().maxRSS / 1024);
    const peakWithServers = Math.max(...c16.map((r) => r.peak_rss_mb_with_servers));
    const last = c16.at(-1)!;
    const recorded = recordedRequests(record, last.requests.from, last.requests.to);
    // Each baseline twice, alternating, its lower figure kept (the first pass also warms the JIT).
    const plains = { fetch: [] as PlainRun[], node_http: [] as PlainRun[] };
    for (let i = 0; i < 2; i++) {
      plains.fetch.push(await plainClient(server.url, recorded, last.queries, 16, viaFetch));
      plains.node_http.push(await plainClient(server.url, recorded, last.queries, 16, viaNodeHttp));
    }
    const best = (runs: PlainRun[]) =>
      runs.reduce((a, b) => (b.cpu_ms_per_query < a.cpu_ms_per_query ? b : a));
    const plainFetch = best(plains.fetch);
    const plainHttp = best(plains.node_http);
    // The target's figure is against the cheaper of the two: the strongest plain client.
    const plain = plainHttp.cpu_ms_per_query <= plainFetch.cpu_ms_per_query ? plainHttp : plainFetch;
    const cpu16 = mid(c16, (r) => r.cpu_ms_per_query);
    const servers16 = mid(c16, (r) => r.servers_cpu_ms_per_query);
    const overhead = +(cpu16 - plain.cpu_ms_per_query).toFixed(1);
    const sandbox16 = mid(c16, (r) => r.sandbox_cpu_ms_per_query);
    const beyondSandbox = +(overhead - sandbox16).toFixed(1);
    const runs = [c1, c4, ...c16].map(({ requests: _, ...r }) => r);
    const out = {
      bench: "batch",
      model_latency_ms: latency,
      servers: Object.fromEntries(hub.status().map((s) => [s.id, s.state])),
      note:
        `each query is 3 model calls (perception, decision, perception) plus one sandboxed tool call; ideal = ` +
        `model calls × ${latency} ms / concurrency; floor = ceil(queries / concurrency) × a query's model calls × ${latency} ms, ` +
        `the least any schedule of whole queries allows; concurrency 1 ran ${c1.queries} queries (scaled down for time)`,
      runs,
      ratio_at_16: { median, min: ratios[0], max: ratios.at(-1), runs: ratios.length },
      peak_rss_mb: peak,
      /** This process and its servers together, the peak of the concurrency-16 runs. */
      peak_rss_mb_with_servers: peakWithServers,
      cpu_at_16: {
        /** Medians of the concurrency-16 runs, ms per query. */
        pda_ms_per_query: cpu16,
        servers_ms_per_query: servers16,
        /** The cheaper of the two plain clients below, the baseline of the overhead figures. */
        plain_http_client_ms_per_query: plain.cpu_ms_per_query,
        /** pda's CPU beyond what a plain client making the same model calls spends; the servers are apart. */
        overhead_ms_per_query: overhead,
        sandbox_ms_per_query: sandbox16,
        /** The figure: pda's CPU beyond the sandbox, the tools and a plain client's model calls. */
        overhead_beyond_sandbox_ms_per_query: beyondSandbox,
        plain_http_client: { fetch: plainFetch, node_http: plainHttp },
      },
      load_avg_1m: {
        start: +load0.toFixed(2),
        end: +loadavg()[0]!.toFixed(2),
        cores: availableParallelism(),
      },
      target: { ratio_at_16: 1.15, peak_rss_mb_with_servers: 300, overhead_beyond_sandbox_ms_per_query: 10 },
      meets_target: median <= 1.15 && peakWithServers <= 300 && beyondSandbox <= 10,
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    await hub.close();
    cacheStore.close();
    server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
