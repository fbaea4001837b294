/**
 * Retries done by an official SDK (openai, @anthropic-ai/sdk), watched from under it through the fetch it is
 * given: how many tries a call made (for the retry count on results), a name that does not resolve (the call
 * is ended at once, where the SDK would retry it), and a Retry-After longer than the policy allows (the SDK is
 * told not to retry, and the error says how long the server asked to wait). Then what such a call's failure
 * becomes: one ModelError mapping for both SDKs, whose error classes come from the same generator.
 */
import { ModelError } from "../core/index.js";
import { connectionError, type RetryPolicy } from "./retry.js";

/** Error codes of a name that does not resolve: failing at once beats a minute of retries when offline. */
const DNS_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_NONAME", "EAI_FAIL"]);

/**
 * What one call's fetches did, seen from under the SDK: the tries it made, a DNS failure (ended at once: the
 * SDK would retry it), and a Retry-After longer than the policy allows (the SDK is told not to retry).
 */
export class CallWatch {
  attempts = 0;
  dnsError?: unknown;
  refusedDelayMs?: number;
  readonly signal: AbortSignal;
  private readonly ctrl = new AbortController();

  constructor(
    private readonly base: typeof globalThis.fetch,
    readonly policy: RetryPolicy,
    outer?: AbortSignal,
  ) {
    this.signal = outer ? AbortSignal.any([outer, this.ctrl.signal]) : this.ctrl.signal;
  }

  get retries(): number {
    return Math.max(0, this.attempts - 1);
  }

  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    this.attempts++;
    let res: Response;
    try {
      res = await this.base(input, init);
    } catch (e) {
      const code = (e as { cause?: { code?: string } })?.cause?.code;
      if (code && DNS_CODES.has(code)) {
        this.dnsError = e;
        this.ctrl.abort();
      }
      throw e;
    }
    const delay = retryAfterMs(res.headers);
    if (
      (res.status === 429 || res.status >= 500) &&
      delay !== undefined &&
      delay > this.policy.max_server_delay_ms
    ) {
      this.refusedDelayMs = delay;
      const headers = new Headers(res.headers);
      headers.set("x-should-retry", "false");
      return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
    }
    return res;
  };
}

/** `retry-after-ms` (OpenAI) or `retry-after` in seconds or as an HTTP date, as the SDK reads them. */
export function retryAfterMs(headers: Headers): number | undefined {
  const ms = Number(headers.get("retry-after-ms"));
  if (headers.get("retry-after-ms") && Number.isFinite(ms)) return ms;
  const v = headers.get("retry-after");
  if (!v) return undefined;
  const s = Number(v);
  if (Number.isFinite(s)) return s * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

type ErrorClass<T extends Error = Error> = abstract new (...args: never[]) => T;

/** The error classes both official SDKs export (one generator wrote both). */
export interface SdkErrors {
  APIUserAbortError: ErrorClass;
  APIConnectionTimeoutError: ErrorClass;
  APIConnectionError: ErrorClass<Error & { cause?: unknown }>;
  APIError: ErrorClass<Error & { status: number | undefined }>;
}

/** What a provider says about one failed call, for sdkCallError. */
export interface FailedCall<E extends Error> {
  /** "openai", "anthropic": named in every message. */
  provider: string;
  model: string;
  baseUrl: string;
  /** What to check when the server cannot be reached. */
  check: string;
  /** The variable holding the key, named on a 401 or 403. */
  keyVar: string;
  call: CallWatch;
  timeoutMs: number;
  /** The SDK's error classes; undefined when it failed to load. */
  errors: SdkErrors | undefined;
  /** What the server said in an HTTP error, after "HTTP <status>" (its body's shape is the provider's). */
  said(e: E): string;
  /** A hint for a 400, from what the server said, when the model's families entry may be the cause. */
  hint400(said: string): string;
}

/** A call through an official SDK that failed, as a typed ModelError (retryable where a later try may work). */
export function sdkCallError<E extends Error>(e: unknown, f: FailedCall<E>): ModelError {
  if (e instanceof ModelError) return e;
  const where = `${f.provider}:${f.model} at ${f.baseUrl}`;
  const tries = f.call.attempts > 1 ? ` (gave up after ${f.call.attempts} tries)` : "";
  const server = `${f.provider} at ${f.baseUrl}`;
  if (f.call.dnsError) return connectionError(f.call.dnsError, server, f.check);
  const x = f.errors;
  if (!x) return new ModelError("MODEL_HTTP", `${where}: ${String(e)}`, { cause: e });
  if (e instanceof x.APIUserAbortError)
    return new ModelError("MODEL_ABORTED", `${where}: aborted`, { cause: e });
  if (e instanceof x.APIConnectionTimeoutError) {
    return new ModelError("MODEL_TIMEOUT", `${where}: no reply within ${f.timeoutMs} ms${tries}`, {
      cause: e,
      retryable: true,
    });
  }
  if (e instanceof x.APIConnectionError) {
    const err = connectionError(e.cause ?? e, server, f.check);
    return new ModelError(err.code, `${err.message}${tries}`, { cause: e, retryable: true });
  }
  if (e instanceof x.APIError && typeof e.status === "number") {
    const said = f.said(e as unknown as E);
    const text = `${where}: HTTP ${e.status}${said}`;
    // 429, 408 and 5xx (Anthropic's 529 "overloaded" too) are worth another try later.
    if (e.status === 429 || e.status === 408 || e.status >= 500) {
      const waited = f.call.refusedDelayMs;
      const why =
        waited !== undefined
          ? ` (the server asks to retry in ${Math.round(waited / 1000)} s, more than the ` +
            `${Math.round(f.call.policy.max_server_delay_ms / 1000)} s this call may wait)`
          : tries;
      return new ModelError(e.status === 429 ? "MODEL_RATE_LIMITED" : "MODEL_HTTP", `${text}${why}`, {
        cause: e,
        retryable: true,
      });
    }
    if (e.status === 401 || e.status === 403) {
      return new ModelError("MODEL_NO_KEY", `${text} — check ${f.keyVar}`, { cause: e });
    }
    return new ModelError("MODEL_HTTP", `${text}${e.status === 400 ? f.hint400(said) : ""}`, { cause: e });
  }
  return new ModelError("MODEL_HTTP", `${where}: ${(e as Error)?.message ?? String(e)}`, { cause: e });
}
