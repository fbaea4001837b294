/**
 * Retries done by an official SDK (openai, @anthropic-ai/sdk), watched from under it through the fetch it is
 * given: how many tries a call made (for the retry count on results), a name that does not resolve (the call
 * is ended at once, where the SDK would retry it), and a Retry-After longer than the policy allows (the SDK is
 * told not to retry, and the error says how long the server asked to wait).
 */
import type { RetryPolicy } from "./retry.js";

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
