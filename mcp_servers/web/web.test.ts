/**
 * The web server as a real process through the hub, against an HTTP fixture server on 127.0.0.1:
 * pages to Markdown, both search endpoint kinds, the rate limiter, and clear errors when offline.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolError } from "../../core/index.js";
import { MultiMCP } from "../index.js";
import { WEB_SERVER, gone } from "../hub/tests/helpers.js";
import { RateLimited, RateLimiter } from "./limiter.js";
import { parseDuckDuckGo } from "./search.js";

const DUCK_PAGE = `<html><body>
<div class="result results_links"><h2 class="result__title">
<a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Fmcp&amp;rut=abc">The <b>MCP</b> spec</a></h2>
<a class="result__snippet" href="//duckduckgo.com/l/?uddg=x">Tools, resources &amp; prompts.</a></div>
<div class="result results_links"><h2 class="result__title">
<a rel="nofollow" class="result__a" href="https://direct.example/page">Direct link</a></h2>
<div class="result__snippet">Second snippet</div></div>
</body></html>`;

let fixture: Server;
let base: string;
let closedPort: number;

beforeAll(async () => {
  fixture = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    switch (url.pathname) {
      case "/article":
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        return res.end(
          '<html><head><title>An article</title><script>track()</script></head><body><nav>menu</nav><h1>Heading</h1><p>Body with a <a href="/x">link</a>.</p></body></html>',
        );
      case "/moved":
        res.writeHead(302, { location: "/article" });
        return res.end();
      case "/plain":
        res.writeHead(200, { "content-type": "text/plain" });
        return res.end("just text ".repeat(50));
      case "/image":
        res.writeHead(200, { "content-type": "image/png" });
        return res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
      case "/searx":
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(
          JSON.stringify({
            query: url.searchParams.get("q"),
            format: url.searchParams.get("format"),
            results: [1, 2, 3].map((i) => ({
              title: `Result ${i} for ${url.searchParams.get("q")}`,
              url: `https://r${i}.example/`,
              content: `snippet ${i}`,
            })),
          }),
        );
      case "/duck":
        res.writeHead(200, { "content-type": "text/html" });
        return res.end(DUCK_PAGE);
      default:
        res.writeHead(404, { "content-type": "text/plain" });
        return res.end("not here");
    }
  });
  await new Promise<void>((r) => fixture.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(fixture.address() as AddressInfo).port}`;
  // A port that was just free: nothing listens there.
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
  closedPort = (probe.address() as AddressInfo).port;
  await new Promise((r) => probe.close(r));
});
afterAll(() => fixture.close());

async function withWeb(args: string[], body: (hub: MultiMCP) => Promise<void>): Promise<void> {
  const hub = await MultiMCP.start({
    servers: [{ id: "web", command: process.execPath, args: [WEB_SERVER, ...args] }],
  });
  try {
    expect(hub.status()[0]!.state).toBe("ready");
    await body(hub);
  } finally {
    const pid = hub.status()[0]!.pid;
    await hub.close();
    expect(await gone([pid])).toEqual([]);
  }
}

async function failure(p: Promise<unknown>): Promise<ToolError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ToolError);
  return e as ToolError;
}

describe("web server", () => {
  it("fetches pages as Markdown and reports clear errors", async () => {
    await withWeb(["--search-url", `${base}/searx`, "--search-kind", "searxng"], async (hub) => {
      const page = await hub.call("fetch_url_as_markdown", { url: `${base}/moved` });
      expect(page).toMatchObject({
        title: "An article",
        final_url: `${base}/article`,
        content_type: "text/html",
        markdown: "# Heading\n\nBody with a [link](/x).",
        truncated: false,
      });
      const plain = (await hub.call("fetch_url_as_markdown", { url: `${base}/plain`, max_chars: 100 })) as {
        markdown: string;
        truncated: boolean;
      };
      expect(plain.markdown).toHaveLength(100);
      expect(plain.truncated).toBe(true);
      expect((await failure(hub.call("fetch_url_as_markdown", { url: `${base}/image` }))).message).toMatch(
        /image\/png, not a text page/,
      );
      expect((await failure(hub.call("fetch_url_as_markdown", { url: `${base}/gone` }))).message).toMatch(
        /HTTP 404/,
      );
      expect((await failure(hub.call("fetch_url_as_markdown", { url: "ftp://x/y" }))).message).toMatch(
        /only http and https/,
      );
      const refused = await failure(
        hub.call("fetch_url_as_markdown", { url: `http://127.0.0.1:${closedPort}/` }),
      );
      expect(refused.message).toMatch(/refused the connection/);
      const offline = await failure(hub.call("fetch_url_as_markdown", { url: "http://pda-test.invalid/" }));
      expect(offline.message).toMatch(/cannot resolve pda-test\.invalid .*offline/);
    });
  });

  it("searches a SearXNG-style JSON endpoint", async () => {
    await withWeb(["--search-url", `${base}/searx`, "--search-kind", "searxng"], async (hub) => {
      const found = await hub.call("web_search", { query: "tabletop robots", max_results: 2 });
      expect(found).toEqual({
        query: "tabletop robots",
        results: [
          { title: "Result 1 for tabletop robots", url: "https://r1.example/", snippet: "snippet 1" },
          { title: "Result 2 for tabletop robots", url: "https://r2.example/", snippet: "snippet 2" },
        ],
      });
    });
  });

  it("searches a DuckDuckGo-style HTML endpoint; an unreachable one is a clear error", async () => {
    await withWeb(["--search-url", `${base}/duck`, "--search-kind", "duckduckgo"], async (hub) => {
      const found = (await hub.call("web_search", { query: "mcp" })) as { results: unknown[] };
      expect(found.results).toEqual([
        { title: "The MCP spec", url: "https://example.org/mcp", snippet: "Tools, resources & prompts." },
        { title: "Direct link", url: "https://direct.example/page", snippet: "Second snippet" },
      ]);
    });
    await withWeb(["--search-url", `http://127.0.0.1:${closedPort}/search`], async (hub) => {
      const e = await failure(hub.call("web_search", { query: "x" }));
      expect(e.code).toBe("TOOL_ERROR");
      expect(e.message).toMatch(/refused the connection/);
    });
  });

  it("rate-limits per host and says when to retry", async () => {
    await withWeb(
      ["--search-url", `${base}/searx`, "--search-kind", "searxng", "--rate", "0.01", "--burst", "2"],
      async (hub) => {
        await hub.call("web_search", { query: "a" });
        await hub.call("fetch_url_as_markdown", { url: `${base}/plain` });
        const e = await failure(hub.call("web_search", { query: "c" }));
        expect(e.message).toMatch(/rate limit for 127\.0\.0\.1:\d+: too many requests; try again in \d+ s/);
      },
    );
  });
});

describe("rate limiter and parsers", () => {
  it("lets a burst through, then spaces requests, then refuses long waits", async () => {
    let now = 0;
    const slept: number[] = [];
    const clock = { now: () => now, sleep: async (ms: number) => void slept.push(ms) };
    const limiter = new RateLimiter(2, 2, 1000, clock);
    await limiter.take("h");
    await limiter.take("h");
    expect(slept).toEqual([]);
    await limiter.take("h"); // 1 token short at 2/s: wait 500 ms
    expect(slept).toEqual([500]);
    await limiter.take("other");
    expect(slept).toEqual([500]);
    await limiter.take("h"); // 2 short: 1000 ms, still allowed
    await expect(limiter.take("h")).rejects.toBeInstanceOf(RateLimited);
    now += 10_000;
    await limiter.take("h");
    expect(slept).toEqual([500, 1000]);
  });

  it("parses DuckDuckGo result pages", () => {
    expect(parseDuckDuckGo(DUCK_PAGE).map((r) => r.url)).toEqual([
      "https://example.org/mcp",
      "https://direct.example/page",
    ]);
    expect(parseDuckDuckGo("<html>no results</html>")).toEqual([]);
  });
});
