/**
 * HTTP GET for the bundled servers: a timeout, a size cap, http(s) only, addresses checked by an
 * EgressPolicy on every redirect hop (followed here, not by the HTTP client), and errors that say plainly what
 * went wrong (offline, DNS, refused, timeout, HTTP status) instead of a bare "fetch failed".
 * node:http rather than fetch: fetch cannot be given the `lookup` that pins a connection to a checked address.
 */
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { pipeline, type Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { EgressPolicy, UrlRefused } from "./egress.js";

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
  maxRedirects?: number;
  headers?: Record<string, string>;
  /** Which addresses may be reached (default: public ones only). */
  egress?: EgressPolicy;
}

const USER_AGENT = "pda/0.1 (an MCP tool server)";
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function explain(url: URL, e: unknown): string {
  const err = e as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = err?.code ?? err?.cause?.code ?? "";
  const host = url.host;
  if (code === "ENOTFOUND" || code === "EAI_AGAIN")
    return `cannot resolve ${url.hostname} (${code}): no DNS answer; this machine may be offline`;
  if (code === "ECONNREFUSED") return `${host} refused the connection (nothing listening there)`;
  if (code === "ECONNRESET") return `${host} closed the connection`;
  if (code === "ENETUNREACH" || code === "EHOSTUNREACH")
    return `${host} is unreachable (${code}); this machine may be offline`;
  if (code === "ETIMEDOUT") return `connecting to ${host} timed out`;
  return `fetching ${url.href} failed: ${err?.message ?? String(e)}`;
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

function get(
  url: URL,
  lookup: ReturnType<EgressPolicy["lookupFor"]>,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    // agent: false — a fresh connection per request, never a pooled socket some other lookup opened.
    const req = send(url, { headers, lookup, signal, agent: false }, resolve);
    req.on("error", reject);
    req.end();
  });
}

function decoded(res: IncomingMessage): Readable {
  const encoding = String(res.headers["content-encoding"] ?? "")
    .trim()
    .toLowerCase();
  const decoder =
    encoding === "gzip" || encoding === "x-gzip"
      ? createGunzip()
      : encoding === "deflate"
        ? createInflate()
        : encoding === "br"
          ? createBrotliDecompress()
          : undefined;
  // pipeline passes an error of either stream on to the decoder, where the reader sees it.
  return decoder ? pipeline(res, decoder, () => {}) : res;
}

/** GET `raw` and read at most `maxBytes` of its body as text (UTF-8). Throws FetchError with a clear message. */
export async function fetchText(raw: string, options: FetchOptions = {}): Promise<FetchedText> {
  const first = parseHttpUrl(raw);
  const egress = options.egress ?? EgressPolicy.PUBLIC_ONLY;
  const timeoutMs = options.timeoutMs ?? 15_000;
  const maxBytes = options.maxBytes ?? 2 * 1024 * 1024;
  const maxRedirects = options.maxRedirects ?? 5;
  const headers = {
    "user-agent": USER_AGENT,
    accept: "text/html,text/plain,application/json,*/*;q=0.5",
    "accept-encoding": "gzip, deflate, br",
    ...options.headers,
  };
  const signal = AbortSignal.timeout(timeoutMs);
  let url = first;
  let from: URL | undefined;
  let res: IncomingMessage;
  for (let hop = 0; ; hop++) {
    try {
      res = await get(url, egress.lookupFor(url, from), headers, signal);
    } catch (e) {
      if (e instanceof UrlRefused) throw e;
      if (signal.aborted) throw new FetchError(`${url.href} did not answer within ${timeoutMs} ms`);
      throw new FetchError(explain(url, e));
    }
    const location = res.headers.location;
    if (!REDIRECTS.has(res.statusCode ?? 0) || !location) break;
    res.destroy();
    if (hop === maxRedirects) throw new FetchError(`${first.href}: more than ${maxRedirects} redirects`);
    let next: URL;
    try {
      next = parseHttpUrl(new URL(location, url).href);
    } catch (e) {
      throw new FetchError(`${url.href} redirected to ${JSON.stringify(location)}: ${(e as Error).message}`);
    }
    from = url;
    url = next;
  }
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 299) {
    res.destroy();
    throw new FetchError(`${url.href} answered HTTP ${status} ${res.statusMessage ?? ""}`.trim());
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  try {
    for await (const chunk of decoded(res)) {
      const value = chunk as Buffer;
      const room = maxBytes - size;
      if (value.byteLength > room) {
        chunks.push(value.subarray(0, room));
        size += room;
        truncated = true;
        break;
      }
      chunks.push(value);
      size += value.byteLength;
    }
  } catch (e) {
    if (signal.aborted) throw new FetchError(`${url.href} did not finish within ${timeoutMs} ms`);
    throw new FetchError(explain(url, e));
  } finally {
    res.destroy();
  }
  return {
    url: first.href,
    finalUrl: url.href,
    status,
    contentType: String(res.headers["content-type"] ?? ""),
    text: Buffer.concat(chunks).toString("utf8"),
    truncated,
  };
}
