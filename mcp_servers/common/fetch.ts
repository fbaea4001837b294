/**
 * HTTP GET for the bundled servers: a timeout, a size cap, http(s) only, and errors that say plainly what
 * went wrong (offline, DNS, refused, timeout, HTTP status) instead of a bare "fetch failed".
 */
export class FetchError extends Error {}

export interface FetchedText {
  url: string;
  finalUrl: string;
  status: number;
  contentType: string;
  text: string;
  truncated: boolean;
}

export interface FetchOptions {
  timeoutMs?: number;
  maxBytes?: number;
  headers?: Record<string, string>;
  fetch?: typeof fetch;
}

const USER_AGENT = "pda/0.1 (an MCP tool server)";

function explain(url: URL, e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } })?.cause;
  const code = cause?.code ?? "";
  const host = url.host;
  if (code === "ENOTFOUND" || code === "EAI_AGAIN")
    return `cannot resolve ${url.hostname} (${code}): no DNS answer; this machine may be offline`;
  if (code === "ECONNREFUSED") return `${host} refused the connection (nothing listening there)`;
  if (code === "ECONNRESET") return `${host} closed the connection`;
  if (code === "ENETUNREACH" || code === "EHOSTUNREACH")
    return `${host} is unreachable (${code}); this machine may be offline`;
  if (code.startsWith("UND_ERR_CONNECT_TIMEOUT") || code === "ETIMEDOUT")
    return `connecting to ${host} timed out`;
  return `fetching ${url.href} failed: ${cause?.message ?? (e as Error)?.message ?? String(e)}`;
}

export function parseHttpUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new FetchError(`not a URL: ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new FetchError(`only http and https URLs can be fetched, not ${url.protocol}`);
  }
  return url;
}

/** GET `raw` and read at most `maxBytes` of its body as text (UTF-8). Throws FetchError with a clear message. */
export async function fetchText(raw: string, options: FetchOptions = {}): Promise<FetchedText> {
  const url = parseHttpUrl(raw);
  const timeoutMs = options.timeoutMs ?? 15_000;
  const maxBytes = options.maxBytes ?? 2 * 1024 * 1024;
  const signal = AbortSignal.timeout(timeoutMs);
  let res: Response;
  try {
    res = await (options.fetch ?? fetch)(url, {
      headers: {
        "user-agent": USER_AGENT,
        accept: "text/html,text/plain,application/json,*/*;q=0.5",
        ...options.headers,
      },
      redirect: "follow",
      signal,
    });
  } catch (e) {
    if (signal.aborted) throw new FetchError(`${url.href} did not answer within ${timeoutMs} ms`);
    throw new FetchError(explain(url, e));
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => {});
    throw new FetchError(`${url.href} answered HTTP ${res.status} ${res.statusText}`.trim());
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  try {
    const reader = res.body?.getReader();
    while (reader) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = maxBytes - size;
      if (value.byteLength > room) {
        chunks.push(value.subarray(0, room));
        size += room;
        truncated = true;
        await reader.cancel().catch(() => {});
        break;
      }
      chunks.push(value);
      size += value.byteLength;
    }
  } catch (e) {
    if (signal.aborted) throw new FetchError(`${url.href} did not finish within ${timeoutMs} ms`);
    throw new FetchError(explain(url, e));
  }
  return {
    url: url.href,
    finalUrl: res.url || url.href,
    status: res.status,
    contentType: res.headers.get("content-type") ?? "",
    text: Buffer.concat(chunks).toString("utf8"),
    truncated,
  };
}
