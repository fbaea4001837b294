/**
 * A token bucket per key (the host): `burst` requests at once, then `perSecond`. A request waits for its
 * token, but never longer than `maxWaitMs`; past that it is refused with the time to wait, so a tool call
 * fails clearly instead of stalling until the client's timeout.
 */
export class RateLimited extends Error {
  constructor(
    readonly key: string,
    readonly retryInMs: number,
  ) {
    super(`rate limit for ${key}: too many requests; try again in ${Math.ceil(retryInMs / 1000)} s`);
  }
}

export interface LimiterClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const realClock: LimiterClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
};

export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly maxWaitMs = 10_000,
    private readonly clock: LimiterClock = realClock,
  ) {}

  /** Take a token for `key`, waiting if needed; throws RateLimited when the wait would exceed maxWaitMs. */
  async take(key: string): Promise<void> {
    const now = this.clock.now();
    const b = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.perSecond);
    b.at = now;
    // Reserve the token now (tokens may go negative), so concurrent callers queue in order.
    b.tokens -= 1;
    this.buckets.set(key, b);
    if (b.tokens >= 0) return;
    const waitMs = (-b.tokens / this.perSecond) * 1000;
    if (waitMs > this.maxWaitMs) {
      b.tokens += 1;
      throw new RateLimited(key, waitMs);
    }
    await this.clock.sleep(waitMs);
  }
}
