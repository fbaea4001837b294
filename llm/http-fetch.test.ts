/** httpFetch against a real HTTP server on 127.0.0.1: what the provider SDKs rely on of fetch. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { httpFetch } from "./http-fetch.js";

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function serve(handler: Handler): Promise<string> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => handler(req, Buffer.concat(chunks).toString("utf8"), res));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("httpFetch", () => {
  it("sends the method, headers and body, and reads status, headers and JSON", async () => {
    const seen: Array<{ method?: string; length?: string; type?: string; key?: string; body: string }> = [];
    const url = await serve((req, body, res) => {
      seen.push({
        method: req.method,
        length: req.headers["content-length"],
        type: req.headers["content-type"],
        key: req.headers["x-goog-api-key"] as string | undefined,
        body,
      });
      res.writeHead(200, { "content-type": "application/json", "x-request-id": "r1" });
      res.end(JSON.stringify({ ok: "é" }));
    });
    const body = JSON.stringify({ text: "héllo" });
    const res = await httpFetch(`${url}/v1beta/models/m:generateContent?x=1`, {
      method: "POST",
      headers: new Headers({ "content-type": "application/json", "x-goog-api-key": "k" }),
      body,
    });
    expect(res.ok).toBe(true);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBe("r1");
    expect(await res.json()).toEqual({ ok: "é" });
    expect(seen).toEqual([
      {
        method: "POST",
        length: String(Buffer.byteLength(body)),
        type: "application/json",
        key: "k",
        body,
      },
    ]);
  });

  it("keeps the socket alive between requests", async () => {
    const ports = new Set<number>();
    const url = await serve((req, _body, res) => {
      ports.add(req.socket.remotePort!);
      res.end("{}");
    });
    for (let i = 0; i < 3; i++) await (await httpFetch(url, { method: "POST", body: "{}" })).text();
    expect(ports.size).toBe(1);
  });

  it("sends a request again on a new socket when the kept-alive one was closed under it", async () => {
    const perSocket = new Map<Socket, number>();
    let answered = 0;
    const url = await serve((req, _body, res) => {
      const n = (perSocket.get(req.socket) ?? 0) + 1;
      perSocket.set(req.socket, n);
      // The second request on a socket finds it closed, as when a server's keep-alive timeout ends it.
      if (n > 1) return req.socket.destroy();
      answered++;
      res.end(String(answered));
    });
    expect(await (await httpFetch(url, { method: "POST", body: "a" })).text()).toBe("1");
    expect(await (await httpFetch(url, { method: "POST", body: "b" })).text()).toBe("2");
    expect(perSocket.size).toBe(2);
  });

  it("decompresses a gzip body, as fetch does", async () => {
    const url = await serve((_req, _body, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
      res.end(gzipSync(JSON.stringify({ zipped: true })));
    });
    expect(await (await httpFetch(url)).json()).toEqual({ zipped: true });
  });

  it("gives an error status its body, and a 204 no body", async () => {
    const url = await serve((req, _body, res) => {
      if (req.url === "/none") {
        res.writeHead(204);
        res.end();
        return;
      }
      res.writeHead(429, "Too Many Requests", { "retry-after": "3" });
      res.end(JSON.stringify({ error: { code: 429 } }));
    });
    const limited = await httpFetch(url, { method: "POST", body: "{}" });
    expect([limited.ok, limited.status, limited.statusText]).toEqual([false, 429, "Too Many Requests"]);
    expect(limited.headers.get("retry-after")).toBe("3");
    expect(await limited.json()).toEqual({ error: { code: 429 } });
    const none = await httpFetch(`${url}/none`);
    expect([none.status, none.body]).toEqual([204, null]);
  });

  it("follows a redirect", async () => {
    const url = await serve((req, body, res) => {
      if (req.url === "/old") {
        res.writeHead(307, { location: "/new" });
        res.end();
        return;
      }
      res.end(`${req.method} ${req.url} ${body}`);
    });
    expect(await (await httpFetch(`${url}/old`, { method: "POST", body: "x" })).text()).toBe("POST /new x");
  });

  it("streams an event stream as it comes", async () => {
    let more!: () => void;
    const url = await serve((_req, _body, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: 1\n\n");
      more = () => res.end("data: 2\n\n");
    });
    const res = await httpFetch(url);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value!).toString()).toBe("data: 1\n\n");
    more();
    const rest: string[] = [];
    for (let r = await reader.read(); !r.done; r = await reader.read())
      rest.push(Buffer.from(r.value).toString());
    expect(rest.join("")).toBe("data: 2\n\n");
  });

  it("rejects with the signal's reason when aborted, and does not wait for the server", async () => {
    const url = await serve(() => {}); // never answers
    const ctrl = new AbortController();
    const pending = httpFetch(url, { method: "POST", body: "{}", signal: ctrl.signal });
    setTimeout(() => ctrl.abort(new Error("timed out after 50 ms")), 50);
    await expect(pending).rejects.toThrow("timed out after 50 ms");
    const already = AbortSignal.abort(new Error("gone before"));
    await expect(httpFetch(url, { signal: already })).rejects.toThrow("gone before");
  });

  it("fails as fetch fails: a TypeError whose cause names the system error", async () => {
    const url = await serve(() => {});
    const port = new URL(url).port;
    await new Promise((r) => servers.pop()!.close(r));
    const err = (await httpFetch(`http://127.0.0.1:${port}/`).catch((e: unknown) => e)) as TypeError & {
      cause?: { code?: string };
    };
    expect(err).toBeInstanceOf(TypeError);
    expect(err.message).toBe("fetch failed");
    expect(err.cause?.code).toBe("ECONNREFUSED");
  });

  it("fails when the server closes the connection before the whole body", async () => {
    const url = await serve((_req, _body, res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("only ten b");
      setTimeout(() => res.socket?.destroy(), 20);
    });
    await expect(httpFetch(url)).rejects.toThrow("fetch failed");
  });

  it("leaves what it does not handle to the global fetch", async () => {
    const url = await serve((req, body, res) => res.end(`${req.method} ${body}`));
    const viaRequest = await httpFetch(new Request(url, { method: "PUT", body: "r" }));
    expect(await viaRequest.text()).toBe("PUT r");
    const stream = new Blob(["streamed"]).stream();
    const viaStream = await httpFetch(url, { method: "POST", body: stream, duplex: "half" } as RequestInit);
    expect(await viaStream.text()).toBe("POST streamed");
  });
});
