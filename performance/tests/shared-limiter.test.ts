/**
 * The Redis-shared limiter against a real redis-server: a success and the release of its slot go to Redis as
 * one command (three per model call before: acquire, success, release), and a success with no release after
 * it still reaches Redis on its own.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SharedLimiters } from "../shared-limiter.js";
import { startRedis, type TestRedis } from "../testing/redis.js";

let redis: TestRedis;
let client: Redis;

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url);
}, 60_000);

afterAll(async () => {
  client?.disconnect();
  await redis?.stop();
});

/** Scripts Redis has run (EVALSHA and EVAL), from its command statistics. */
async function scriptsRun(): Promise<number> {
  const info = await client.info("commandstats");
  let n = 0;
  for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) n += Number(m[1]);
  return n;
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("SharedLimiter", () => {
  it("sends a success with its slot's release as one command, and the cap grows back", async () => {
    const conn = new Redis(redis.url);
    try {
      const limiter = new SharedLimiters(conn, { maxConcurrent: 4 }).for("gemini");
      await limiter.rateLimited(0); // the cap halves to 2: a success grows it back
      const limit = async () => Number(await client.hget("pda:limiter:{gemini}:state", "limit"));
      expect(await limit()).toBe(2);

      const before = await scriptsRun();
      const release = await limiter.acquire();
      expect(await client.zcard("pda:limiter:{gemini}:holders")).toBe(1);
      limiter.succeeded();
      release(); // as LimitedProvider does, in the same tick
      await until(
        "the slot to be free",
        async () => (await client.zcard("pda:limiter:{gemini}:holders")) === 0,
      );
      await until("the cap to grow", async () => (await limit()) > 2);
      await new Promise((r) => setTimeout(r, 50)); // a stray separate success would have landed by now
      // acquire + (success and release together); the INFO calls themselves are not scripts.
      expect((await scriptsRun()) - before).toBe(2);
      expect(await limit()).toBe(2.5);
    } finally {
      conn.disconnect();
    }
  });

  it("a success with no release in the same tick is sent alone", async () => {
    const conn = new Redis(redis.url);
    try {
      const limiter = new SharedLimiters(conn, { maxConcurrent: 4 }).for("other");
      await limiter.rateLimited(0);
      const limit = async () => Number(await client.hget("pda:limiter:{other}:state", "limit"));
      const release = await limiter.acquire();
      limiter.succeeded();
      await until("the cap to grow", async () => (await limit()) > 2);
      expect(await client.zcard("pda:limiter:{other}:holders")).toBe(1); // still held
      const before = await scriptsRun();
      release();
      await until(
        "the slot to be free",
        async () => (await client.zcard("pda:limiter:{other}:holders")) === 0,
      );
      expect((await scriptsRun()) - before).toBe(1);
      expect(await limit()).toBe(2.5); // the release did not count the success twice
    } finally {
      conn.disconnect();
    }
  });
});
