/**
 * Transport retries: exponential backoff with jitter on transient failures (429, 5xx, timeouts, refused
 * connections), honouring the delay a server asks for. Sleeps go through the injected Clock so tests can
 * measure the waits without waiting.
 */
import { ModelError, type Clock, type ModelErrorCode } from "../core/index.js";

/** A failure worth another try; `retryAfterMs` is the delay the server asked for, if it said. */
export class TransientModelError extends ModelError {
  readonly retryAfterMs?: number;
  constructor(code: ModelErrorCode, message: string, options?: { cause?: unknown; retryAfterMs?: number }) {
    super(code, message, { cause: options?.cause, retryable: true });
    this.retryAfterMs = options?.retryAfterMs;
  }
}

export interface RetryPolicy {
  /** Retries after the first try (0 = no retries). */
  max_retries: number;
  base_delay_ms: number;
  max_delay_ms: number;
  /** A server asking for a longer wait than this is not waited for: the call fails with its error. */
  max_server_delay_ms: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  max_retries: 4,
  base_delay_ms: 1000,
  max_delay_ms: 30_000,
  max_server_delay_ms: 120_000,
};

export interface RetryContext {
  clock: Clock;
  policy: RetryPolicy;
  /** Uniform [0, 1); injectable so the jitter is deterministic in tests. */
  random?: () => number;
  signal?: AbortSignal;
  /** Called before each wait, e.g. for a verbose trace. */
  onRetry?: (info: { attempt: number; delayMs: number; error: ModelError }) => void;
}

/** The wait before retry number `attempt` (1-based): the server's delay, else capped exponential with jitter. */
export function retryDelay(
  attempt: number,
  error: TransientModelError,
  policy: RetryPolicy,
  random: () => number,
) {
  if (error.retryAfterMs !== undefined) return error.retryAfterMs;
  const exp = Math.min(policy.max_delay_ms, policy.base_delay_ms * 2 ** (attempt - 1));
  // "Equal jitter": half fixed, half random, so concurrent clients spread out but never retry at once.
  return Math.round(exp / 2 + (random() * exp) / 2);
}

/** Run `fn`, retrying TransientModelErrors; returns the value and the number of retries spent. */
export async function withRetry<T>(
  fn: () => Promise<T>,
  ctx: RetryContext,
): Promise<{ value: T; retries: number }> {
  const random = ctx.random ?? Math.random;
  for (let attempt = 1; ; attempt++) {
    try {
      return { value: await fn(), retries: attempt - 1 };
    } catch (e) {
      if (!(e instanceof TransientModelError) || ctx.signal?.aborted) throw e;
      if (attempt > ctx.policy.max_retries) {
        throw new ModelError(e.code, `${e.message} (gave up after ${attempt} tries)`, {
          cause: e,
          retryable: true,
        });
      }
      const delayMs = retryDelay(attempt, e, ctx.policy, random);
      if (delayMs > ctx.policy.max_server_delay_ms) {
        throw new ModelError(
          e.code,
          `${e.message} (the server asks to retry in ${Math.round(delayMs / 1000)} s, more than the ` +
            `${Math.round(ctx.policy.max_server_delay_ms / 1000)} s this call may wait)`,
          { cause: e, retryable: true },
        );
      }
      ctx.onRetry?.({ attempt, delayMs, error: e });
      await ctx.clock.sleep(delayMs, ctx.signal);
    }
  }
}

/** Error codes of a name that does not resolve: no network, or a wrong host name. */
const DNS_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_NONAME", "EAI_FAIL"]);

/**
 * A failed connection (fetch threw: refused, reset, unresolved name, blocked port) as MODEL_UNREACHABLE (exit
 * 3) naming what to check, e.g. GEMINI_BASE_URL. The same for every provider and the model download: refused
 * and reset connections are retried; a name that does not resolve is not (offline, DNS fails at once and will
 * fail again, so the answer comes now instead of after a minute of backoff).
 */
export function connectionError(e: unknown, where: string, check: string): ModelError {
  if (e instanceof ModelError) return e;
  const err = e as Error & { cause?: { code?: string; message?: string } };
  if (err?.name === "AbortError") return new ModelError("MODEL_ABORTED", `${where}: aborted`, { cause: e });
  const code = err?.cause?.code;
  const why = code ?? err?.cause?.message ?? err?.message ?? String(e);
  const message = `${where}: cannot connect (${why}); check ${check}`;
  if (code && DNS_CODES.has(code)) return new ModelError("MODEL_UNREACHABLE", message, { cause: e });
  return new TransientModelError("MODEL_UNREACHABLE", message, { cause: e });
}

/** Parse a google.protobuf.Duration as JSON-encoded ("38s", "1.5s", "0.250s") into milliseconds. */
export function parseDuration(text: unknown): number | undefined {
  if (typeof text !== "string") return undefined;
  const m = /^(\d+(?:\.\d+)?)s$/.exec(text.trim());
  return m ? Math.round(Number(m[1]) * 1000) : undefined;
}

/**
 * Run one attempt with a wall-clock timeout: the attempt gets a signal that aborts on the caller's signal or
 * when the time is up; a timeout becomes a retryable MODEL_TIMEOUT.
 */
export async function withTimeout<T>(
  timeoutMs: number,
  signal: AbortSignal | undefined,
  fn: (signal: AbortSignal) => Promise<T>,
  what: string,
): Promise<T> {
  const ctrl = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ctrl.abort(new Error(`timed out after ${timeoutMs} ms`));
  }, timeoutMs);
  const onAbort = () => ctrl.abort(signal?.reason);
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const result = await fn(ctrl.signal);
    // Some clients resolve with a partial value when aborted; a timed-out attempt is a failure regardless.
    if (timedOut) throw new Error("timed out");
    return result;
  } catch (e) {
    if (timedOut) {
      throw new TransientModelError("MODEL_TIMEOUT", `${what}: no reply within ${timeoutMs} ms`, {
        cause: e,
      });
    }
    throw e;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}
