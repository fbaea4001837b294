/**
 * The per-provider limiter of a queue run, shared by every `pda worker` through Redis: the same rules as the
 * in-process AdaptiveLimiter (a cap on model calls in flight; a 429 pauses everyone for the server's delay
 * and halves the cap once per pause; each success grows it back by about one per round), kept in Redis so
 * that N workers together send what one local batch of the run's --concurrency would. Each step is one Lua
 * script, atomic in Redis and timed by Redis's clock, so hosts with skewed clocks agree on a pause.
 *
 * A slot is a member of a sorted set scored by its lease's end, renewed while the call runs: the slots of a
 * worker killed mid-call free themselves when their lease ends.
 */
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { systemClock, type Clock } from "../core/index.js";
import type { LimiterOptions, Limiters, ProviderLimiter, RateLimitedAnswer } from "./limiter.js";

/** A provider's lowered cap is forgotten after an hour without model calls (the next run starts afresh). */
const STATE_TTL_MS = 3_600_000;

/** Redis time in ms, and the state hash's cap clamped to this run's maximum. */
const PRELUDE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max = tonumber(ARGV[1])
local limit = tonumber(redis.call('HGET', KEYS[1], 'limit') or max)
if limit > max then limit = max end
local paused = tonumber(redis.call('HGET', KEYS[1], 'paused_until') or 0)
`;

/** ARGV: max, token, lease ms. Returns {1, 0} (a slot), {0, ms} (paused this long) or {0, -1} (cap full). */
const ACQUIRE = `${PRELUDE}
if paused > now then return {0, paused - now} end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= math.floor(limit) then return {0, -1} end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[2])
return {1, 0}`;

/** ARGV: max, token, lease ms. Extends a held slot's lease (XX: never re-adds a released one). */
const RENEW = `${PRELUDE}
return redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[3]), ARGV[2])`;

/** ARGV: token. */
const RELEASE = `return redis.call('ZREM', KEYS[2], ARGV[1])`;

const GROW = `
redis.call('HSET', KEYS[1], 'streak', 0)
redis.call('PEXPIRE', KEYS[1], ${STATE_TTL_MS})
if limit < max then
  redis.call('HSET', KEYS[1], 'limit', tostring(math.min(max, limit + 1 / math.floor(limit))))
end
return 1`;

/** ARGV: max. */
const SUCCEEDED = `${PRELUDE}${GROW}`;

/** ARGV: max, token. A success and its slot's release in one command (they come together). */
const RELEASE_SUCCEEDED = `${PRELUDE}
redis.call('ZREM', KEYS[2], ARGV[2])${GROW}`;

/** ARGV: max, min, server delay ms or '', base delay ms, max delay ms. Returns {pause ms, cap}. */
const RATE_LIMITED = `${PRELUDE}
local streak = redis.call('HINCRBY', KEYS[1], 'streak', 1)
redis.call('PEXPIRE', KEYS[1], ${STATE_TTL_MS})
local delay
if ARGV[3] ~= '' then delay = math.max(0, tonumber(ARGV[3]))
else delay = math.min(tonumber(ARGV[5]), tonumber(ARGV[4]) * 2 ^ math.min(streak - 1, 16)) end
if paused <= now then
  limit = math.max(tonumber(ARGV[2]), math.floor(limit / 2))
  redis.call('HSET', KEYS[1], 'limit', tostring(limit))
end
local untilMs = now + delay
if untilMs > paused then
  redis.call('HSET', KEYS[1], 'paused_until', tostring(untilMs))
  paused = untilMs
end
return {math.max(0, paused - now), math.floor(limit)}`;

type Script = (state: string, holders: string, ...args: Array<string | number>) => Promise<unknown>;

export interface SharedLimiterOptions extends LimiterOptions {
  /** How long a slot outlives a worker that died holding it (default 30 s; renewed while held). */
  leaseMs?: number;
  /** Longest wait between two tries for a slot when the cap is full (default 40 ms). */
  pollMs?: number;
}

/** One shared limiter per provider, all through one Redis connection; `maxConcurrent` is the run's. */
export class SharedLimiters implements Limiters {
  private readonly limiters = new Map<string, SharedLimiter>();
  private readonly scripts: Record<
    "acquire" | "renew" | "release" | "succeeded" | "releaseSucceeded" | "rateLimited",
    Script
  >;

  constructor(
    redis: Redis,
    private readonly options: SharedLimiterOptions,
  ) {
    const define = (name: string, lua: string): Script => {
      if (!(name in redis)) redis.defineCommand(name, { numberOfKeys: 2, lua });
      const fn = (redis as unknown as Record<string, Script>)[name]!;
      return fn.bind(redis);
    };
    this.scripts = {
      acquire: define("pdaLimiterAcquire", ACQUIRE),
      renew: define("pdaLimiterRenew", RENEW),
      release: define("pdaLimiterRelease", RELEASE),
      succeeded: define("pdaLimiterSucceeded", SUCCEEDED),
      releaseSucceeded: define("pdaLimiterReleaseSucceeded", RELEASE_SUCCEEDED),
      rateLimited: define("pdaLimiterRateLimited", RATE_LIMITED),
    };
  }

  for(provider: string): SharedLimiter {
    let l = this.limiters.get(provider);
    if (!l) this.limiters.set(provider, (l = new SharedLimiter(provider, this.scripts, this.options)));
    return l;
  }
}

export class SharedLimiter implements ProviderLimiter {
  private readonly state: string;
  private readonly holders: string;
  private readonly max: number;
  private readonly clock: Clock;
  private readonly lease: number;

  constructor(
    provider: string,
    private readonly scripts: SharedLimiters["scripts"],
    private readonly options: SharedLimiterOptions,
  ) {
    // One hash slot per provider (the braces), should the Redis be a cluster.
    this.state = `pda:limiter:{${provider}}:state`;
    this.holders = `pda:limiter:{${provider}}:holders`;
    this.max = Math.max(1, Math.floor(options.maxConcurrent));
    this.clock = options.clock ?? systemClock;
    this.lease = options.leaseMs ?? 30_000;
  }

  async acquire(signal?: AbortSignal): Promise<() => void> {
    const token = randomUUID();
    const poll = this.options.pollMs ?? 40;
    for (;;) {
      signal?.throwIfAborted();
      const [ok, wait] = (await this.scripts.acquire(
        this.state,
        this.holders,
        this.max,
        token,
        this.lease,
      )) as [number, number];
      if (ok === 1) return this.held(token, signal);
      // Paused: until the pause ends. Cap full: soon, with jitter so waiting workers do not ask in step.
      await this.clock.sleep(wait > 0 ? wait : poll / 2 + (Math.random() * poll) / 2, signal);
    }
  }

  rateLimited(retryAfterMs?: number): Promise<RateLimitedAnswer> {
    const o = this.options;
    return this.scripts
      .rateLimited(
        this.state,
        this.holders,
        this.max,
        Math.min(this.max, Math.max(1, o.minConcurrent ?? 1)),
        retryAfterMs === undefined ? "" : Math.round(retryAfterMs),
        o.baseDelayMs ?? 1000,
        o.maxDelayMs ?? 60_000,
      )
      .then((r) => {
        const [delayMs, limit] = r as [number, number];
        return { delayMs, limit };
      });
  }

  /** Successes not yet sent: a slot released in the same tick sends one with its release. */
  private successes = 0;

  succeeded(): void {
    // Not awaited: the cap grows a little later at worst. A Redis blip must not fail the call that succeeded.
    // A caller releases its slot right after (LimitedProvider does, synchronously): that release carries the
    // success, one Redis command instead of two; without one by the end of the tick it goes alone.
    this.successes += 1;
    queueMicrotask(() => {
      if (this.successes === 0) return;
      this.successes -= 1;
      this.scripts.succeeded(this.state, this.holders, this.max).catch(() => {});
    });
  }

  /** The slot's release, and its lease renewed until then (a call may outlast the lease). */
  private held(token: string, signal?: AbortSignal): () => void {
    const renew = setInterval(
      () => void this.scripts.renew(this.state, this.holders, this.max, token, this.lease).catch(() => {}),
      Math.max(1000, Math.floor(this.lease / 3)),
    );
    renew.unref();
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      clearInterval(renew);
      // Not awaited either; a release lost to a Redis blip frees its slot when the lease ends.
      if (this.successes > 0) {
        this.successes -= 1;
        this.scripts.releaseSucceeded(this.state, this.holders, this.max, token).catch(() => {});
      } else this.scripts.release(this.state, this.holders, token).catch(() => {});
    };
    if (signal?.aborted) {
      release();
      signal.throwIfAborted();
    }
    return release;
  }
}
