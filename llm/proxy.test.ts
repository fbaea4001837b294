/** HTTPS_PROXY / HTTP_PROXY: every HTTP provider goes through a real forward proxy on 127.0.0.1 that counts. */
import { createServer, request as httpRequest, type Server } from "node:http";
import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { PerceptionSnapshot } from "../core/index.js";
import { samplePerception, startFakeAnthropic, startFakeGemini, startFakeOpenAI } from "../testing/index.js";
import { createProvider } from "./index.js";

/** A forward proxy: absolute-form HTTP requests and CONNECT tunnels, each counted with its target. */
async function startProxy() {
  const forwarded: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "");
    forwarded.push(`${req.method} ${url.host}${url.pathname}`);
    const up = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: req.method,
        headers: req.headers,
      },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  server.on("connect", (req, socket, head) => {
    forwarded.push(`CONNECT ${req.url}`);
    const [host, port] = (req.url ?? "").split(":");
    const up = connect(Number(port), host, () => {
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    up.on("error", () => socket.destroy());
    socket.on("error", () => up.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    forwarded,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const perceive = {
  role: "perception",
  system: "You are the perception module.",
  prompt: "Query: 2 + 2",
  schema: PerceptionSnapshot,
  schemaName: "PerceptionSnapshot",
};

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

describe("HTTPS_PROXY / HTTP_PROXY", () => {
  it("the openai and gemini providers send every request through the proxy", async () => {
    const proxy = await startProxy();
    const openai = await startFakeOpenAI({ handler: () => ({ json: samplePerception() }) });
    const gemini = await startFakeGemini({ handler: () => ({ json: samplePerception() }) });
    closers.push(proxy.close, openai.close, gemini.close);
    const proxyEnv = { HTTPS_PROXY: proxy.url, HTTP_PROXY: proxy.url };
    const o = createProvider("openai:m", { env: { ...proxyEnv, OPENAI_BASE_URL: openai.url } });
    const g = createProvider("gemini:gemini-test-flash", {
      env: { ...proxyEnv, GEMINI_API_KEY: "k", GEMINI_BASE_URL: gemini.url },
    });
    expect((await o.generate(perceive)).value).toEqual(samplePerception());
    expect((await g.generate(perceive)).value).toEqual(samplePerception());
    const hosts = [new URL(openai.url).host, new URL(gemini.url).host];
    // Through a tunnel or as an absolute-form request: either way the proxy carried it.
    const carried = (host: string) => proxy.forwarded.filter((f) => f.includes(host)).length;
    expect(carried(hosts[0]!)).toBe(1);
    expect(carried(hosts[1]!)).toBe(1);
    expect(openai.requests).toHaveLength(1);
    expect(gemini.requests).toHaveLength(1);
  });

  it("the anthropic provider sends its requests through the proxy", async () => {
    const proxy = await startProxy();
    const anthropic = await startFakeAnthropic({ handler: () => ({ json: samplePerception() }) });
    closers.push(proxy.close, anthropic.close);
    const env = { HTTP_PROXY: proxy.url, ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: anthropic.url };
    const a = createProvider("anthropic:claude-haiku-4-5", { env });
    expect((await a.generate(perceive)).value).toEqual(samplePerception());
    expect(proxy.forwarded.filter((f) => f.includes(new URL(anthropic.url).host))).toHaveLength(1);
    expect(anthropic.requests).toHaveLength(1);
  });

  it("without a proxy in the environment the requests go direct", async () => {
    const proxy = await startProxy();
    const openai = await startFakeOpenAI({ handler: () => ({ json: samplePerception() }) });
    closers.push(proxy.close, openai.close);
    await createProvider("openai:m", { env: { OPENAI_BASE_URL: openai.url } }).generate(perceive);
    expect(openai.requests).toHaveLength(1);
    expect(proxy.forwarded).toEqual([]);
  });

  it("NO_PROXY exempts a host", async () => {
    const proxy = await startProxy();
    const openai = await startFakeOpenAI({ handler: () => ({ json: samplePerception() }) });
    closers.push(proxy.close, openai.close);
    const env = { HTTP_PROXY: proxy.url, NO_PROXY: "127.0.0.1", OPENAI_BASE_URL: openai.url };
    await createProvider("openai:m", { env }).generate(perceive);
    expect(openai.requests).toHaveLength(1);
    expect(proxy.forwarded).toEqual([]);
  });
});
