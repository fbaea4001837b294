/**
 * The submitter's sweep (its check of the jobs' states besides the event stream) against a real redis-server,
 * with no worker: it reads the queue's id lists a few commands at a time, not one state read per pending job,
 * and still puts back a job that is gone from Redis.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SessionStore } from "../../memory/index.js";
import { runQueued } from "../queue-submit.js";
import { QUEUE_NAME } from "../queue-job.js";
import { startRedis, type TestRedis } from "../testing/redis.js";

let dir: string;
let redis: TestRedis;
let client: Redis;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "pda-sweep-"));
  redis = await startRedis();
  client = new Redis(redis.url, { maxRetriesPerRequest: null });
}, 60_000);

afterEach(async () => {
  client?.disconnect();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Scripts Redis has run (EVALSHA and EVAL): BullMQ's reads and writes are scripts. */
async function scriptsRun(): Promise<number> {
  const info = await client.info("commandstats");
  let n = 0;
  for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) n += Number(m[1]);
  return n;
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("pda batch --queue: the sweep", () => {
  it("costs a few commands however many jobs are pending, and re-adds a job gone from Redis", async () => {
    const n = 200;
    const input = join(dir, "queries.jsonl");
    writeFileSync(
      input,
      Array.from({ length: n }, (_, i) => JSON.stringify({ query: `q${i}`, expected: String(i) })).join("\n"),
    );
    const store = SessionStore.open(join(dir, "pda.db"));
    const queue = new Queue(QUEUE_NAME, { connection: client });
    const stop = new AbortController();
    const sweepMs = 20;
    try {
      const run = runQueued(
        {
          input,
          out: join(dir, "out"),
          db: join(dir, "pda.db"),
          model: "none",
          concurrency: 4,
          hil: "policy:fail",
          queue: redis.url,
          setup: { model: null, profile: null, fingerprint: { models: [], profile_sha256: "x" } },
          sweepMs,
          signal: stop.signal,
        },
        { store },
      );
      await until("the jobs to be enqueued", async () => (await queue.getWaitingCount()) === n);

      // No worker takes them: every job stays pending, and the sweep runs every 20 ms meanwhile.
      const before = await scriptsRun();
      const t0 = Date.now();
      await new Promise((r) => setTimeout(r, 1000));
      const scripts = (await scriptsRun()) - before;
      const sweeps = (Date.now() - t0) / sweepMs + 2;
      // Three list reads a sweep (one state read per pending job would be 200 a sweep).
      expect(scripts).toBeLessThanOrEqual(3 * sweeps);

      const [gone] = await queue.getWaiting(0, 0);
      await queue.remove(gone!.id!);
      expect(await queue.getJob(gone!.id!)).toBeUndefined();
      await until(
        "the sweep to add the job again",
        async () => (await queue.getJob(gone!.id!)) !== undefined,
      );
      expect(await queue.getWaitingCount()).toBe(n);

      stop.abort();
      const r = await run;
      expect(r.status).toBe("interrupted");
      expect(r.remaining).toBe(n);
    } finally {
      stop.abort();
      await queue.obliterate({ force: true }).catch(() => {});
      await queue.close();
      store.close();
    }
  }, 120_000);
});
