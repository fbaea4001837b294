/**
 * A ModelProvider that sends every `generate` through the provider's shared AdaptiveLimiter. The provider
 * under it should have its own transport retries off (`retry.max_retries: 0`) so every 429 reaches the
 * limiter: a 429 (ModelError MODEL_RATE_LIMITED, with the server's RetryInfo delay on it or on its cause)
 * pauses everyone and the call is tried again after the pause; other retryable failures (503, timeouts,
 * refused connections) are retried with capped exponential backoff for this call only.
 */
import {
  ModelError,
  systemClock,
  type Clock,
  type GenerateRequest,
  type GenerateResult,
  type ModelProvider,
} from "../core/index.js";
import { TransientModelError } from "../llm/index.js";
import type { ProviderLimiter } from "./limiter.js";

export interface LimitedOptions {
  clock?: Clock;
  random?: () => number;
  /** Retries of 5xx / timeouts / unreachable per call (default 4). */
  maxTransientRetries?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** 429s in a row one call may see before it gives up (default 60). */
  maxRateLimitRetries?: number;
  /** A server asking to wait longer than this (a spent daily quota) makes the call give up (default 10 min). */
  maxServerDelayMs?: number;
  /** Called around waits for the limiter, so a per-query timeout can stop counting meanwhile. */
  onWait?: (waiting: boolean) => void;
  onRateLimited?: (info: { provider: string; delayMs: number; limit: number }) => void;
  onRetry?: (info: { provider: string; code: string; attempt: number; delayMs: number }) => void;
  /** Called when the call gives up because of rate limits (the batch stops instead of failing queries). */
  onRateLimitGiveUp?: (error: ModelError) => void;
}

/** The delay a rate-limit error carries: on the error itself, or on the transient error it wraps. */
export function retryAfterOf(e: unknown): number | undefined {
  if (e instanceof TransientModelError && e.retryAfterMs !== undefined) return e.retryAfterMs;
  const cause = (e as { cause?: unknown })?.cause;
  return cause instanceof TransientModelError ? cause.retryAfterMs : undefined;
}

export function isRateLimit(e: unknown): e is ModelError {
  return e instanceof ModelError && e.code === "MODEL_RATE_LIMITED";
}

/** Retryable failures other than 429 (the transport marks them; MODEL_ABORTED never is). */
export function isTransient(e: unknown): e is ModelError {
  return e instanceof ModelError && e.retryable && e.code !== "MODEL_RATE_LIMITED";
}

export class LimitedProvider implements ModelProvider {
  readonly provider: string;
  readonly model: string;
  private readonly clock: Clock;

  constructor(
    private readonly inner: ModelProvider,
    private readonly limiter: ProviderLimiter,
    private readonly options: LimitedOptions = {},
  ) {
    this.provider = inner.provider;
    this.model = inner.model;
    this.clock = options.clock ?? systemClock;
  }

  async generate<T>(request: GenerateRequest<T>): Promise<GenerateResult<T>> {
    const o = this.options;
    let retries = 0;
    let transient = 0;
    let limited = 0;
    for (;;) {
      const release = await this.acquire(request.signal);
      try {
        const result = await this.inner.generate(request);
        this.limiter.succeeded();
        return { ...result, retries: (result.retries ?? 0) + retries };
      } catch (e) {
        if (request.signal?.aborted) throw e;
        if (isRateLimit(e)) {
          limited += 1;
          const asked = retryAfterOf(e);
          if (limited > (o.maxRateLimitRetries ?? 60) || (asked ?? 0) > (o.maxServerDelayMs ?? 600_000)) {
            const why =
              limited > (o.maxRateLimitRetries ?? 60)
                ? `still rate limited after ${limited} tries`
                : `the server asks to wait ${Math.round((asked ?? 0) / 1000)} s`;
            const err = new ModelError("MODEL_RATE_LIMITED", `${e.message} (${why})`, {
              cause: e,
              retryable: true,
            });
            o.onRateLimitGiveUp?.(err);
            throw err;
          }
          const { delayMs, limit } = await this.limiter.rateLimited(asked);
          o.onRateLimited?.({ provider: this.provider, delayMs, limit });
          retries += 1;
          continue;
        }
        if (isTransient(e) && transient < (o.maxTransientRetries ?? 4)) {
          transient += 1;
          retries += 1;
          const exp = Math.min(o.maxDelayMs ?? 15_000, (o.baseDelayMs ?? 500) * 2 ** (transient - 1));
          const delayMs = retryAfterOf(e) ?? Math.round(exp / 2 + ((o.random ?? Math.random)() * exp) / 2);
          o.onRetry?.({ provider: this.provider, code: e.code, attempt: transient, delayMs });
          release();
          await this.clock.sleep(delayMs, request.signal);
          continue;
        }
        throw e;
      } finally {
        release();
      }
    }
  }

  private async acquire(signal?: AbortSignal): Promise<() => void> {
    this.options.onWait?.(true);
    try {
      return await this.limiter.acquire(signal);
    } finally {
      this.options.onWait?.(false);
    }
  }
}
