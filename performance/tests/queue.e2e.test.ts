/**
 * `pda batch --queue` and `pda worker` as child processes around a real redis-server: the real Gemini client
 * against the fake server, the real math MCP server in each worker, a real SQLite store per process. Every
 * query must come out exactly once, also when a worker or the submitter is killed with SIGKILL mid-run.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Queue } from "bullmq";
import { parse } from "csv-parse/sync";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../core/index.js";
import { startFakeGemini, type FakeGemini, type FakeGeminiHandler } from "../../testing/index.js";
import { loadedModules } from "../../testing/modules.js";
import { BatchState, JOB_PROTOCOL, QUERY_COLUMNS, QUEUE_NAME } from "../index.js";
import { fakeAgent } from "../testing/fake-agent.js";
import { startRedis, type TestRedis } from "../testing/redis.js";

const MAIN = join(PACKAGE_ROOT, "dist", "main.js");

interface Child {
  proc: ChildProcess;
  out: () => { stdout: string; stderr: string };
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

let dir: string;
let redis: TestRedis;
let gemini: FakeGemini | undefined;
let children: Child[] = [];

function pda(args: string[], env: Record<string, string> = {}): Child {
  const proc = spawn(process.execPath, [MAIN, ...args], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: dir,
      NO_COLOR: "1",
      GEMINI_API_KEY: "dummy-key",
      GEMINI_BASE_URL: gemini?.url ?? "",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  proc.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  proc.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => proc.kill("SIGKILL"), 240_000);
  const done = new Promise<{
    code: number | null;
    signal: NodeJS.Signals | null;
    stdout: string;
    stderr: string;
  }>((resolve) =>
    proc.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    }),
  );
  const child = { proc, done, out: () => ({ stdout, stderr }) };
  children.push(child);
  return child;
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A worker with its own store, once it waits for jobs. */
async function worker(name: string, ...extra: string[]): Promise<Child> {
  const w = pda([
    "worker",
    "--queue",
    redis.url,
    "--db",
    join(dir, `${name}.db`),
    "--name",
    name,
    "--concurrency",
    "4",
    // Short enough for the kill test to take jobs again soon, long enough that a busy machine does not make a
    // live worker look stalled (BullMQ would run its job twice; the row would still be adopted once).
    "--stall-interval",
    "5s",
    ...extra,
  ]);
  await until(`${name} ready`, () => /waiting for jobs/.test(w.out().stderr) || w.proc.exitCode !== null);
  expect(w.out().stderr).toMatch(/waiting for jobs/);
  return w;
}

function queries(n: number): { path: string; sums: number[] } {
  const path = join(dir, "queries.csv");
  const lines = ["Query,Tools Needed,Complexity,Expected"];
  const sums: number[] = [];
  for (let i = 0; i < n; i++) {
    const a = 100 + i * 7;
    const b = 3 * i + 1;
    sums.push(a + b);
    lines.push(`What is ${a} + ${b}?,add,low,${a + b}`);
  }
  writeFileSync(path, `${lines.join("\n")}\n`);
  return { path, sums };
}

function readCsv(path: string): Record<string, string>[] {
  const [header, ...body] = parse(readFileSync(path, "utf8")) as string[][];
  return body.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i]!])));
}

function count(db: string, sql: string, ...args: unknown[]): number {
  let sqlite: Database.Database | undefined;
  try {
    sqlite = new Database(db, { readonly: true, fileMustExist: true });
    return (sqlite.prepare(sql).get(...args) as { n: number }).n;
  } catch {
    return 0; // no store or no tables yet
  } finally {
    sqlite?.close();
  }
}

/** Every row once, correct, its session in the submitter's store with its tool call. */
function expectExactlyOnce(out: string, db: string, sums: number[]) {
  const rows = readCsv(join(out, "test_queries_output.csv"));
  expect(rows.map((r) => r.Output)).toEqual(sums.map(String));
  expect(rows.every((r) => r.Status === "succeeded" && r.Correct === "true")).toBe(true);
  expect(new Set(rows.map((r) => r["Session Id"])).size).toBe(sums.length);
  const tools = readCsv(join(out, "tool_performance_status.csv"));
  expect(tools.map((t) => [t["Tool Name"], t["Number of Times Invoked"]])).toEqual([
    ["add", String(sums.length)],
  ]);
  const sqlite = new Database(db, { readonly: true });
  try {
    expect(sqlite.prepare("SELECT status, count(*) AS n FROM batch_items GROUP BY status").all()).toEqual([
      { status: "done", n: sums.length },
    ]);
    const calls = sqlite.prepare("SELECT count(*) AS n FROM tool_calls WHERE session_id = ?");
    const status = sqlite.prepare("SELECT status FROM sessions WHERE id = ?");
    for (const r of rows) {
      expect(status.get(r["Session Id"])).toEqual({ status: "succeeded" });
      expect(calls.get(r["Session Id"])).toEqual({ n: 1 });
    }
  } finally {
    sqlite.close();
  }
  return rows;
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "pda-queue-"));
  redis = await startRedis();
});
afterEach(async () => {
  for (const c of children) c.proc.kill("SIGKILL");
  await Promise.all(children.map((c) => c.done));
  children = [];
  await redis.stop();
  await gemini?.close();
  gemini = undefined;
  rmSync(dir, { recursive: true, force: true });
});

describe("pda batch --queue with pda worker", () => {
  it("two workers run the queries; the submitter's store holds every session and the CSVs match a local run", async () => {
    gemini = await startFakeGemini({ handler: fakeAgent({ delayMs: 20 }) });
    const { path, sums } = queries(16);
    const db = join(dir, "submit.db");
    const out = join(dir, "out");
    // One worker before the submitter, one after.
    const a = await worker("wa");
    const submit = pda(["batch", path, "--out", out, "--db", db, "--queue", redis.url]);
    await until(
      "a first row",
      () => count(db, "SELECT count(*) AS n FROM batch_items WHERE status = 'done'") > 0,
    );
    const b = await worker("wb");
    const r = await submit.done;
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^16\/16 queries done, 16 succeeded, 16\/16 correct$/m);
    // The same progress lines as a local batch, with the worker that ran each row.
    expect(r.stderr).toMatch(/^batch [0-9a-f-]+: 16 queries, 16 to run$/m);
    expect(r.stderr).toMatch(/^\[16\/16\] row-\d+ succeeded correct .* by wa|wb/m);
    const rows = expectExactlyOnce(out, db, sums);

    // Each session ran in a worker's own store and was copied to the submitter's: `pda show` works on it.
    const ran = (name: string) =>
      count(join(dir, `${name}.db`), "SELECT count(*) AS n FROM sessions WHERE status = 'succeeded'");
    expect(ran("wa") + ran("wb")).toBe(16);
    expect(ran("wa")).toBeGreaterThan(0);
    const show = pda(["show", rows[3]!["Session Id"]!, "--db", db]);
    const shown = await show.done;
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("What is 121 + 10?");
    expect(shown.stdout).toMatch(/add/);
    expect(
      count(db, "SELECT count(*) AS n FROM llm_calls WHERE session_id = ?", rows[3]!["Session Id"]),
    ).toBe(
      count(
        join(dir, "wa.db"),
        "SELECT count(*) AS n FROM llm_calls WHERE session_id = ?",
        rows[3]!["Session Id"],
      ) +
        count(
          join(dir, "wb.db"),
          "SELECT count(*) AS n FROM llm_calls WHERE session_id = ?",
          rows[3]!["Session Id"],
        ),
    );

    // The same file run locally gives the same rows (but for session ids and timings).
    const local = pda(["batch", path, "--out", join(dir, "local"), "--db", join(dir, "local.db")]);
    expect((await local.done).code).toBe(0);
    const strip = (x: Record<string, string>[]) =>
      x.map(({ "Session Id": _s, "Duration ms": _d, ...rest }) => rest);
    expect(strip(readCsv(join(dir, "local", "test_queries_output.csv")))).toEqual(strip(rows));
    const header = readFileSync(join(out, "test_queries_output.csv"), "utf8").split("\n")[0];
    expect(header).toBe(QUERY_COLUMNS.join(","));
    // The run's jobs are gone from Redis once adopted.
    // BullMQ leaves a connection it was given open: closed below, before this test's Redis stops.
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    const queue = new Queue(QUEUE_NAME, { connection });
    try {
      expect(await queue.getJobCounts("completed", "failed", "wait", "active", "delayed")).toEqual({
        completed: 0,
        failed: 0,
        wait: 0,
        active: 0,
        delayed: 0,
      });
    } finally {
      await queue.close();
      connection.disconnect();
    }
    a.proc.kill("SIGTERM");
    b.proc.kill("SIGTERM");
    for (const w of [await a.done, await b.done]) {
      expect(w.code).toBe(0);
      expect(w.stderr).toMatch(
        /stopping: queries in flight are put back for another worker \(again to exit now\)/,
      );
    }
  }, 240_000);

  it("a worker killed with SIGKILL mid-query loses nothing: another takes its jobs after the stall interval", async () => {
    gemini = await startFakeGemini({ handler: fakeAgent({ delayMs: 150 }) });
    const { path, sums } = queries(12);
    const db = join(dir, "submit.db");
    const out = join(dir, "out");
    const doomed = await worker("doomed", "--verbose");
    const submit = pda(["batch", path, "--out", out, "--db", db, "--queue", redis.url]);
    // Kill it while it holds jobs (its queries are in flight in its own store).
    await until(
      "queries in flight in the doomed worker",
      () => count(join(dir, "doomed.db"), "SELECT count(*) AS n FROM sessions WHERE status = 'running'") >= 2,
    );
    doomed.proc.kill("SIGKILL");
    expect((await doomed.done).signal).toBe("SIGKILL");
    const taken = count(
      join(dir, "doomed.db"),
      "SELECT count(*) AS n FROM sessions WHERE status = 'running'",
    );
    expect(taken).toBeGreaterThan(0);
    await worker("rescuer");
    const r = await submit.done;
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^12\/12 queries done, 12 succeeded, 12\/12 correct$/m);
    expectExactlyOnce(out, db, sums);
    // The rows the doomed worker held were run again by the rescuer.
    expect(
      count(join(dir, "rescuer.db"), "SELECT count(*) AS n FROM sessions WHERE status = 'succeeded'"),
    ).toBeGreaterThanOrEqual(taken);
  }, 240_000);

  it("a submitter killed with SIGKILL re-attaches with --resume: nothing enqueued twice, every row once", async () => {
    gemini = await startFakeGemini({ handler: fakeAgent({ delayMs: 100 }) });
    const { path, sums } = queries(20);
    const db = join(dir, "submit.db");
    const out = join(dir, "out");
    await worker("w1");
    const args = ["batch", path, "--out", out, "--db", db, "--queue", redis.url];
    const first = pda(args);
    await until(
      "some rows",
      () => count(db, "SELECT count(*) AS n FROM batch_items WHERE status = 'done'") >= 3,
    );
    first.proc.kill("SIGKILL");
    expect((await first.done).signal).toBe("SIGKILL");
    const doneAtKill = count(db, "SELECT count(*) AS n FROM batch_items WHERE status = 'done'");
    expect(doneAtKill).toBeLessThan(20);
    // The worker goes on meanwhile: results wait in Redis for the submitter.
    const w1 = join(dir, "w1.db");
    await until(
      "the worker to finish every job",
      () =>
        count(w1, "SELECT count(*) AS n FROM sessions WHERE status = 'succeeded'") >= 20 &&
        count(w1, "SELECT count(*) AS n FROM sessions WHERE status = 'running'") === 0,
    );
    const ranBefore = count(w1, "SELECT count(*) AS n FROM sessions");
    const again = pda([...args, "--resume"]);
    const r = await again.done;
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^20\/20 queries done, 20 succeeded, 20\/20 correct$/m);
    expect(r.stderr).toMatch(
      new RegExp(`20 queries, ${doneAtKill} already done \\(resumed\\), ${20 - doneAtKill} to run`),
    );
    expectExactlyOnce(out, db, sums);
    // The resumed submitter adopted the results waiting in Redis and enqueued nothing again: no query ran anew.
    expect(count(w1, "SELECT count(*) AS n FROM sessions")).toBe(ranBefore);
    const state = BatchState.parse(JSON.parse(readFileSync(join(out, "batch.json"), "utf8")));
    expect(state.invocations.map((i) => i.status)).toEqual(["running", "finished"]);
  }, 240_000);

  it("a worker whose config differs refuses the jobs, named in the submitter's progress; a matching one runs them", async () => {
    gemini = await startFakeGemini({ handler: fakeAgent() });
    const { path, sums } = queries(3);
    // The submitter's config: the bundled one with another step budget.
    const config = join(dir, "config");
    cpSync(join(PACKAGE_ROOT, "config"), config, { recursive: true });
    const profiles = join(config, "profiles.yaml");
    writeFileSync(profiles, readFileSync(profiles, "utf8").replace("max_steps: 12", "max_steps: 11"));
    for (const f of ["mcp_server_config.yaml"]) {
      const p = join(config, f);
      writeFileSync(p, readFileSync(p, "utf8").replaceAll("../dist/", `${join(PACKAGE_ROOT, "dist")}/`));
    }
    const db = join(dir, "submit.db");
    const out = join(dir, "out");
    const picky = await worker("picky");
    const submit = pda(["batch", path, "--out", out, "--db", db, "--queue", redis.url, "--config", config]);
    await until("the refusal in the submitter's progress", () =>
      /picky refuses the job: the run's profile .* differs from this worker's config/.test(
        submit.out().stderr,
      ),
    );
    picky.proc.kill("SIGTERM");
    await picky.done;
    await worker("same", "--config", config);
    const r = await submit.done;
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^3\/3 queries done, 3 succeeded, 3\/3 correct$/m);
    expectExactlyOnce(out, db, sums);
  }, 240_000);

  it("Redis unreachable: exit 3 naming the address and the cause, within 5 s, nothing written", async () => {
    const { path } = queries(2);
    const port = redis.port;
    await redis.stop();
    redis = await startRedis(); // afterEach stops this one
    const t0 = Date.now();
    const r = await pda(["batch", path, "--out", join(dir, "out"), "--queue", `redis://127.0.0.1:${port}/0`])
      .done;
    expect(Date.now() - t0).toBeLessThan(30_000); // the process's own deadline is 5 s; this allows for a busy machine
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`Redis at redis://127.0.0.1:${port}/0: `);
    expect(r.stderr).toMatch(/ECONNREFUSED/);
    const w = await pda(["worker", "--queue", `redis://127.0.0.1:${port}/0`]).done;
    expect(w.code).toBe(3);
    expect(w.stderr).toMatch(/ECONNREFUSED/);
  }, 120_000);

  it("a job whose payload is not a valid pda job fails with the reason; the worker goes on", async () => {
    gemini = await startFakeGemini({ handler: fakeAgent() });
    const w = await worker("w");
    // BullMQ leaves a connection it was given open: closed below, before this test's Redis stops.
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    const queue = new Queue(QUEUE_NAME, { connection });
    try {
      const { PDA_VERSION } = await import("../index.js");
      const job = await queue.add("query", {
        protocol: JOB_PROTOCOL,
        pda_version: PDA_VERSION,
        run_id: "r",
        item: { query: 5 },
      });
      await until("the job to fail", async () => (await job.getState()) === "failed");
      const failed = await queue.getJob(job.id!);
      expect(failed!.failedReason).toMatch(/^invalid job payload: item\.\w+: /);
      const other = await queue.add("query", { protocol: 99, pda_version: "9.9.9" });
      await until("the refusal", () =>
        /put back: worker w runs pda .* submitted by pda 9\.9\.9/.test(w.out().stderr),
      );
      expect(await other.getState()).not.toBe("failed");
    } finally {
      await queue.close();
      connection.disconnect();
    }
    expect(w.proc.exitCode).toBeNull();
  }, 120_000);
});

/**
 * The fake agent behind a counter of the model calls the server is answering at once. The handler holds each
 * call itself, so a call counts from its arrival until its answer is ready: never longer than the client holds
 * its limiter slot, so the count can only be lower than the slots held, never higher.
 */
function counted(holdMs: number, fault?: (n: number) => Awaited<ReturnType<FakeGeminiHandler>> | undefined) {
  const agent = fakeAgent();
  const seen = { inFlight: 0, maxInFlight: 0, arrivals: [] as number[] };
  const handler: FakeGeminiHandler = async (req) => {
    seen.arrivals.push(Date.now());
    const f = fault?.(req.n);
    if (f) return f;
    seen.inFlight += 1;
    seen.maxInFlight = Math.max(seen.maxInFlight, seen.inFlight);
    try {
      await new Promise((r) => setTimeout(r, holdMs));
      return await agent(req);
    } finally {
      seen.inFlight -= 1;
    }
  };
  return { seen, handler };
}

const ran = (name: string) =>
  count(join(dir, `${name}.db`), "SELECT count(*) AS n FROM sessions WHERE status = 'succeeded'");

describe("limits shared by the workers through Redis", () => {
  it("the run's --concurrency caps the model calls in flight across all workers, not per worker", async () => {
    const c = counted(60);
    gemini = await startFakeGemini({ handler: c.handler });
    const { path, sums } = queries(16);
    const db = join(dir, "submit.db");
    const out = join(dir, "out");
    // 2 workers × 4 queries each would send up to 8 model calls at once; the run allows 2.
    await worker("wa");
    await worker("wb");
    const r = await pda(["batch", path, "--out", out, "--db", db, "--queue", redis.url, "--concurrency", "2"])
      .done;
    expect(r.code).toBe(0);
    expectExactlyOnce(out, db, sums);
    expect(ran("wa")).toBeGreaterThan(0);
    expect(ran("wb")).toBeGreaterThan(0);
    // Never more than the run's limit at the server, and the limit was reached (the count is not vacuous).
    expect(c.seen.maxInFlight).toBe(2);
  }, 240_000);

  it("a 429 with a retry delay seen by one worker pauses every worker's model calls for that delay", async () => {
    let limitedAt = 0;
    // The 8th model call gets a 429 asking for 2 s; by then both workers hold queries that want the model.
    const c = counted(30, (n) => {
      if (n !== 8) return undefined;
      limitedAt = Date.now();
      return { status: 429, message: "quota", retryDelay: "2s" };
    });
    gemini = await startFakeGemini({ handler: c.handler });
    const { path, sums } = queries(8);
    const db = join(dir, "submit.db");
    const out = join(dir, "out");
    const a = await worker("wa");
    const b = await worker("wb");
    const r = await pda(["batch", path, "--out", out, "--db", db, "--queue", redis.url, "--concurrency", "1"])
      .done;
    expect(r.code).toBe(0);
    expectExactlyOnce(out, db, sums);
    expect(ran("wa")).toBeGreaterThan(0);
    expect(ran("wb")).toBeGreaterThan(0);
    expect(a.out().stderr + b.out().stderr).toMatch(/rate limited by gemini: waiting 2\.0 s/);
    // With one call in flight across the run, the 429 is the only call open when it is answered, and its
    // worker sets the pause before it lets go of the slot: no worker's call reaches the server for 2 s.
    const after = c.seen.arrivals.filter((t) => t > limitedAt);
    expect(after.length).toBeGreaterThan(0);
    expect(Math.min(...after) - limitedAt).toBeGreaterThanOrEqual(2000);
  }, 240_000);
});

describe("BullMQ and ioredis load on the queue path only", () => {
  const QUEUE_LIBS = ["/node_modules/bullmq/", "/node_modules/ioredis/"];
  const env = () => ({
    PATH: process.env.PATH ?? "",
    HOME: dir,
    NO_COLOR: "1",
    GEMINI_API_KEY: "dummy-key",
    GEMINI_BASE_URL: gemini?.url ?? "",
  });

  it("a local `pda batch` loads neither; `pda worker` loads both (the hook sees them)", async () => {
    gemini = await startFakeGemini({ handler: fakeAgent() });
    const { path } = queries(2);
    const local = await loadedModules(
      [MAIN, "batch", path, "--out", join(dir, "out"), "--db", join(dir, "local.db")],
      { cwd: dir, env: env() },
    );
    expect(local.code).toBe(0);
    expect(local.modules.some((m) => m.includes("/dist/performance/runner.js"))).toBe(true);
    expect(local.modules.filter((m) => QUEUE_LIBS.some((l) => m.includes(l)))).toEqual([]);

    // Nothing listens on port 1: the worker loads the queue libraries, then exits 3.
    const queued = await loadedModules(
      [MAIN, "worker", "--queue", "redis://127.0.0.1:1", "--db", join(dir, "w.db")],
      { cwd: dir, env: env() },
    );
    expect(queued.code).toBe(3);
    for (const lib of QUEUE_LIBS) expect(queued.modules.some((m) => m.includes(lib))).toBe(true);
  }, 120_000);
});
