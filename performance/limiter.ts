/**
 * One adaptive limiter per model provider, shared by every query of a batch: it caps the model calls in
 * flight and, when the provider answers 429, pauses everyone for the delay the server asked for and halves
 * the cap (additive increase, multiplicative decrease, as TCP does), so a rate limit slows the whole batch
 * down instead of failing queries.
 */
import { systemClock, type Clock } from "../core/index.js";

export interface LimiterOptions {
  /** The most model calls in flight at once (the batch concurrency). */
  maxConcurrent: number;
  /** Never go below this many calls in flight (default 1). */
  minConcurrent?: number;
  /** Pause after a 429 that names no delay; doubles while 429s keep coming (default 1000 ms). */
  baseDelayMs?: number;
  /** Cap on a pause computed without the server's delay (default 60 s). */
  maxDelayMs?: number;
  clock?: Clock;
}

export interface LimiterStats {
  rate_limited: number;
  /** Sum of the pauses imposed on everyone (overlapping pauses counted once). */
  pause_ms: number;
  limit: number;
  min_limit: number;
  in_flight: number;
  waiting: number;
}

interface Waiter {
  resolve: (release: () => void) => void;
  reject: (e: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

/**
 * What a model call goes through: the in-process AdaptiveLimiter of a local batch, or the limiter every
 * queue worker shares through Redis (shared-limiter.ts). `rateLimited` may answer later (a Redis round trip).
 */
export interface ProviderLimiter {
  /** Wait for a slot (and for any rate-limit pause to end); resolves with the function that frees it. */
  acquire(signal?: AbortSignal): Promise<() => void>;
  /** A call was answered 429: pause everyone and lower the cap; returns the pause and the new cap. */
  rateLimited(retryAfterMs?: number): RateLimitedAnswer | Promise<RateLimitedAnswer>;
  /** A call succeeded: the cap grows back. */
  succeeded(): void;
}

export interface RateLimitedAnswer {
  delayMs: number;
  limit: number;
}

/** One ProviderLimiter per provider name. */
export interface Limiters {
  for(provider: string): ProviderLimiter;
}

export class AdaptiveLimiter implements ProviderLimiter {
  private limit: number;
  private readonly max: number;
  private readonly min: number;
  private readonly baseDelay: number;
  private readonly maxDelay: number;
  private readonly clock: Clock;
  private inFlight = 0;
  private pausedUntil = 0;
  private waiters: Waiter[] = [];
  private wakeAt = 0;
  /** 429s in a row without a success between them, for the backoff of delay-less 429s. */
  private streak = 0;
  private stats = { rate_limited: 0, pause_ms: 0, min_limit: 0 };

  constructor(options: LimiterOptions) {
    this.max = Math.max(1, Math.floor(options.maxConcurrent));
    this.min = Math.min(this.max, Math.max(1, options.minConcurrent ?? 1));
    this.limit = this.max;
    this.baseDelay = options.baseDelayMs ?? 1000;
    this.maxDelay = options.maxDelayMs ?? 60_000;
    this.clock = options.clock ?? systemClock;
    this.stats.min_limit = this.max;
  }

  /** Wait for a slot (and for any rate-limit pause to end); resolves with the function that frees it. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.waiters.length === 0 && this.canStart()) return Promise.resolve(this.grant());
    return new Promise((resolve, reject) => {
      const w: Waiter = { resolve, reject, signal };
      if (signal) {
        w.onAbort = () => {
          this.waiters = this.waiters.filter((x) => x !== w);
          reject(signal.reason);
        };
        signal.addEventListener("abort", w.onAbort, { once: true });
      }
      this.waiters.push(w);
      this.pump();
    });
  }

  /**
   * A call was answered 429. Everyone pauses until the server's delay has passed (or a backoff when it named
   * none), and the cap is halved — once per pause, so a burst of 429s from calls already in flight counts as
   * one signal. Returns the pause this 429 imposed.
   */
  rateLimited(retryAfterMs?: number): RateLimitedAnswer {
    const now = this.clock.now();
    this.stats.rate_limited += 1;
    this.streak += 1;
    const delayMs =
      retryAfterMs !== undefined
        ? Math.max(0, retryAfterMs)
        : Math.min(this.maxDelay, this.baseDelay * 2 ** Math.min(this.streak - 1, 16));
    const until = now + delayMs;
    const alreadyPaused = this.pausedUntil > now;
    if (!alreadyPaused) {
      this.limit = Math.max(this.min, Math.floor(this.limit / 2));
      this.stats.min_limit = Math.min(this.stats.min_limit, Math.floor(this.limit));
    }
    if (until > this.pausedUntil) {
      this.stats.pause_ms += until - Math.max(now, this.pausedUntil);
      this.pausedUntil = until;
    }
    return { delayMs: Math.max(0, this.pausedUntil - now), limit: Math.floor(this.limit) };
  }

  /** A call succeeded: grow the cap by about one per round of calls, up to the maximum. */
  succeeded(): void {
    this.streak = 0;
    if (this.limit < this.max) this.limit = Math.min(this.max, this.limit + 1 / Math.floor(this.limit));
    this.pump();
  }

  snapshot(): LimiterStats {
    return {
      ...this.stats,
      limit: Math.floor(this.limit),
      in_flight: this.inFlight,
      waiting: this.waiters.length,
    };
  }

  private canStart(): boolean {
    return this.inFlight < Math.floor(this.limit) && this.clock.now() >= this.pausedUntil;
  }

  private grant(): () => void {
    this.inFlight += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight -= 1;
      this.pump();
    };
  }

  private pump(): void {
    while (this.waiters.length > 0 && this.canStart()) {
      const w = this.waiters.shift()!;
      if (w.signal && w.onAbort) w.signal.removeEventListener("abort", w.onAbort);
      w.resolve(this.grant());
    }
    const now = this.clock.now();
    // Waiters blocked by a pause (not by the cap) need a wake-up when it ends; one timer at a time.
    if (this.waiters.length > 0 && this.pausedUntil > now && this.wakeAt !== this.pausedUntil) {
      this.wakeAt = this.pausedUntil;
      void this.clock.sleep(this.pausedUntil - now).then(() => {
        this.wakeAt = 0;
        this.pump();
      });
    }
  }
}

/** One limiter per provider name ("gemini", "openai", ...), created on first use. */
export class LimiterRegistry implements Limiters {
  private readonly limiters = new Map<string, AdaptiveLimiter>();
  constructor(private readonly options: LimiterOptions) {}

  for(provider: string): AdaptiveLimiter {
    let l = this.limiters.get(provider);
    if (!l) {
      l = new AdaptiveLimiter(this.options);
      this.limiters.set(provider, l);
    }
    return l;
  }

  /** Totals over every provider's limiter. */
  totals(): { rate_limited: number; pause_ms: number; min_limit: number } {
    const all = [...this.limiters.values()].map((l) => l.snapshot());
    return {
      rate_limited: all.reduce((n, s) => n + s.rate_limited, 0),
      pause_ms: all.reduce((n, s) => n + s.pause_ms, 0),
      min_limit: all.length ? Math.min(...all.map((s) => s.min_limit)) : this.options.maxConcurrent,
    };
  }
}
