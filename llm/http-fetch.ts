/**
 * The fetch the provider SDKs are given: the same contract as Node's fetch for what they send (a string or
 * bytes body to an http(s) URL), made with node:http(s) over keep-alive sockets. Why: Node's fetch (undici
 * behind web streams) costs ~2× the CPU of node:http per model call, ~0.5–0.8 ms a call on this VM, which a
 * batch pays three times a query (#16, bench/batch). Anything else (a Request object, a stream or form body,
 * a redirect) goes to the global fetch, so every request still works as with fetch itself.
 *
 * What it keeps of fetch: errors reject as fetch's do (`TypeError("fetch failed")` with the system error as
 * `cause`, which llm/retry.ts reads), an abort rejects with the signal's reason, the body is decompressed when
 * the server compressed it, and an event stream reaches the SDK as a stream.
 */
import type * as Http from "node:http";
import { Readable } from "node:stream";

// Loaded at the first request: a run with a scripted model never pays for node:https (TLS) or zlib.
const builtin = <T>(name: string) => process.getBuiltinModule(name) as T;

/** Statuses whose Response must have no body (fetch's "null body status"). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);
const REDIRECT = new Set([301, 302, 303, 307, 308]);

/** A fetch over node:http(s); see the module comment for what it hands to the global fetch instead. */
export const httpFetch = ((input: unknown, init: RequestInit = {}) => {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : undefined;
  const body = bytesOf(init.body);
  if (url === undefined || body === null || init.redirect === "manual" || init.redirect === "error") {
    return globalThis.fetch(input as string, init);
  }
  return send(new URL(url), init, body, true).then((res) =>
    res === "redirect" ? globalThis.fetch(url, init) : res,
  );
}) as typeof globalThis.fetch;

/** The body as bytes; undefined when there is none, null for a kind this fetch leaves to the global one. */
function bytesOf(body: RequestInit["body"]): Buffer | undefined | null {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string") return Buffer.from(body);
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  return null;
}

function send(
  url: URL,
  init: RequestInit,
  body: Buffer | undefined,
  retryReset: boolean,
): Promise<Response | "redirect"> {
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(signal.reason as Error);
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, name) => (headers[name] = value));
  if (body) headers["content-length"] = String(body.length);
  const client =
    url.protocol === "https:"
      ? builtin<typeof import("node:https")>("node:https")
      : url.protocol === "http:"
        ? builtin<typeof Http>("node:http")
        : undefined;
  if (!client) return Promise.reject(new TypeError(`fetch failed: unsupported protocol ${url.protocol}`));

  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void) => {
      if (!settled) {
        settled = true;
        fn();
      }
    };
    const fail = (e: unknown) => settle(() => reject(new TypeError("fetch failed", { cause: e })));
    // Node's global agents keep sockets alive between requests (Node ≥ 19).
    const req = client.request(url, { method: init.method ?? "GET", headers });
    // Also after the promise settled: an aborted event stream ends with an error, as with fetch.
    const onAbort = () => {
      settle(() => reject(signal!.reason as Error));
      req.destroy(signal!.reason as Error);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    req.once("close", () => signal?.removeEventListener("abort", onAbort));
    req.on("error", (e: NodeJS.ErrnoException) => {
      // A kept-alive socket the server closed as this request went out: send it once more on a new one, as
      // Node's documentation advises (`reusedSocket`); the server never saw this request.
      if (retryReset && req.reusedSocket && e.code === "ECONNRESET" && !settled) {
        settled = true;
        send(url, init, body, false).then(resolve, reject);
      } else fail(e);
    });
    req.on("response", (res) => {
      const status = res.statusCode ?? 0;
      if (REDIRECT.has(status) && res.headers.location) {
        res.resume();
        settle(() => resolve("redirect"));
        return;
      }
      const responseHeaders = new Headers();
      const raw = res.rawHeaders;
      for (let i = 0; i < raw.length; i += 2) responseHeaders.append(raw[i]!, raw[i + 1]!);
      const meta = { status, statusText: res.statusMessage ?? "", headers: responseHeaders };
      if (NULL_BODY.has(status)) {
        res.resume();
        settle(() => resolve(new Response(null, meta)));
        return;
      }
      const decoded = decode(res, res.headers["content-encoding"], fail);
      if (/^text\/event-stream/i.test(res.headers["content-type"] ?? "")) {
        settle(() => resolve(new Response(Readable.toWeb(decoded) as ReadableStream, meta)));
        return;
      }
      const chunks: Buffer[] = [];
      decoded.on("data", (c: Buffer) => chunks.push(c));
      decoded.on("end", () => settle(() => resolve(new Response(Buffer.concat(chunks), meta))));
      decoded.on("error", fail);
      // The connection dropped before the whole body came.
      res.on("close", () => {
        if (!res.complete) fail(new Error("the server closed the connection before the whole response"));
      });
    });
    req.end(body);
  });
}

/** The response body as sent before the server compressed it (fetch decompresses too). */
function decode(
  res: Http.IncomingMessage,
  encoding: string | undefined,
  fail: (e: unknown) => void,
): Readable {
  const key = encoding?.trim().toLowerCase() ?? "";
  if (!Object.hasOwn(INFLATE, key)) return res;
  const out = INFLATE[key as keyof typeof INFLATE]();
  out.on("error", fail);
  return res.pipe(out);
}

const zlib = () => builtin<typeof import("node:zlib")>("node:zlib");
const INFLATE = {
  gzip: () => zlib().createGunzip(),
  "x-gzip": () => zlib().createGunzip(),
  deflate: () => zlib().createInflate(),
  br: () => zlib().createBrotliDecompress(),
} as const;
