/**
 * A size cap on what an HTTP MCP server sends, as stdio has (a line over MAX_ANSWER_BYTES): a fetch for the
 * SDK's Streamable HTTP transport that counts bytes as the body streams. A JSON answer over the cap, or one
 * SSE event over it, is not read further (the request is aborted) and the request it answers gets a
 * JSON-RPC error instead (code ANSWER_TOO_LARGE), so that call fails typed and the session stays usable.
 * Memory stays bounded by the cap: nothing past it is read.
 */
import type { FetchLike } from "@modelcontextprotocol/client";

/** The largest answer (stdio: line; HTTP: JSON body or SSE event) taken from a server. */
export const MAX_ANSWER_BYTES = 10 * 1024 * 1024;

/** The JSON-RPC error code of the stand-in answer (in the implementation-defined server error range). */
export const ANSWER_TOO_LARGE = -32_090;

export function tooLargeMessage(limit: number): string {
  return `the answer exceeded ${limit} bytes; it was not read further`;
}

/** The id of the JSON-RPC request in a POST body, when it is one request (not a notification or batch). */
function requestId(init: RequestInit | undefined): string | number | undefined {
  if (typeof init?.body !== "string") return undefined;
  try {
    const msg = JSON.parse(init.body) as { id?: unknown; method?: unknown };
    const id = msg.id;
    return typeof msg.method === "string" && (typeof id === "string" || typeof id === "number")
      ? id
      : undefined;
  } catch {
    return undefined;
  }
}

function errorAnswer(id: string | number, limit: number): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    error: { code: ANSWER_TOO_LARGE, message: tooLargeMessage(limit) },
  });
}

export function cappedFetch(limit = MAX_ANSWER_BYTES, base: FetchLike = fetch): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    if (!response.body) return response;
    const id = requestId(init);
    const type = response.headers.get("content-type") ?? "";
    const sse = type.includes("text/event-stream");
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    if (sse) {
      return new Response(capSse(response.body, limit, id), {
        status: response.status,
        statusText: response.statusText,
        headers,
      });
    }
    const body = await readCapped(response.body, limit);
    if (body === undefined) {
      if (id === undefined) throw new Error(tooLargeMessage(limit));
      headers.set("content-type", "application/json");
      return new Response(errorAnswer(id, limit), { status: 200, headers });
    }
    return new Response(body, { status: response.status, statusText: response.statusText, headers });
  };
}

/** The whole body, or undefined (and the download cancelled) once it passes `limit` bytes. */
async function readCapped(body: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array | undefined> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, total);
}

/**
 * The SSE stream as it comes, while each event (the bytes since the last blank line) stays within `limit`.
 * An event past it ends the stream: the partial event is closed off (the SDK drops it as unparsable), the
 * stand-in error answer follows when the stream answers a request, and the download is cancelled.
 */
function capSse(body: ReadableStream<Uint8Array>, limit: number, id: string | number | undefined) {
  const reader = body.getReader();
  const encoder = new TextEncoder();
  let sinceBoundary = 0;
  /** The last two bytes seen, to find a blank line split across chunks. */
  let prev1 = 0;
  let prev2 = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (e) {
        controller.error(e);
        return;
      }
      if (chunk.done) {
        controller.close();
        return;
      }
      const bytes = chunk.value;
      for (let i = 0; i < bytes.length; i++) {
        const b = bytes[i]!;
        sinceBoundary++;
        // "\n\n" or "\n\r\n" ends an event.
        if (b === 10 && (prev1 === 10 || (prev1 === 13 && prev2 === 10))) sinceBoundary = 0;
        prev2 = prev1;
        prev1 = b;
      }
      if (sinceBoundary <= limit) {
        controller.enqueue(bytes);
        return;
      }
      await reader.cancel().catch(() => {});
      const standIn = id === undefined ? "" : `event: message\ndata: ${errorAnswer(id, limit)}\n\n`;
      controller.enqueue(encoder.encode(`\n\n${standIn}`));
      controller.close();
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
