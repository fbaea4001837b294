/**
 * The web server as a real process through the hub, against an HTTP fixture server on 127.0.0.1:
 * pages to Markdown, both search endpoint kinds, the rate limiter, clear errors when offline, and the refusal
 * of non-public addresses (by default, on every redirect hop) unless PDA_WEB_ALLOW_PRIVATE allows them.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EgressPolicy, nonPublicKind, UrlRefused } from "../common/egress.js";
import { fetchText } from "../common/fetch.js";
import { MultiMCP } from "../index.js";
import { WEB_SERVER, gone, failure } from "../hub/tests/helpers.js";
import { RateLimited, RateLimiter } from "./limiter.js";
import { createWebServer } from "./server.js";
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
let port: number;
let closedPort: number;
/** Another private service (think: an admin port) that must never be reached unless allowed. */
let admin: Server;
let adminPort: number;
const adminHits: string[] = [];
const fixtureHits: string[] = [];

beforeAll(async () => {
  fixture = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    fixtureHits.push(url.pathname);
    switch (url.pathname) {
      case "/article":
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        return res.end(
          '<html><head><title>An article</title><script>track()</script></head><body><nav>menu</nav><h1>Heading</h1><p>Body with a <a href="/x">link</a>.</p></body></html>',
        );
      case "/moved":
        res.writeHead(302, { location: "/article" });
        return res.end();
      case "/to-admin":
        res.writeHead(302, { location: `http://127.0.0.1:${adminPort}/secret` });
        return res.end();
      case "/to-metadata":
        res.writeHead(301, { location: "http://169.254.169.254/latest/meta-data/" });
        return res.end();
      case "/to-file":
        res.writeHead(307, { location: "file:///etc/passwd" });
        return res.end();
      case "/hostile":
        res.writeHead(200, { "content-type": "text/html" });
        return res.end("<b>".repeat(100_000) + "deep");
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
  port = (fixture.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
  admin = createServer((req, res) => {
    adminHits.push(req.url ?? "");
    res.writeHead(200, { "content-type": "text/plain" }).end("secret");
  });
  await new Promise<void>((r) => admin.listen(0, "127.0.0.1", r));
  adminPort = (admin.address() as AddressInfo).port;
  // A port that was just free: nothing listens there.
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
  closedPort = (probe.address() as AddressInfo).port;
  await new Promise((r) => probe.close(r));
});
afterAll(() => {
  fixture.close();
  admin.close();
});

/** PDA_WEB_ALLOW_PRIVATE for the server process (the hub passes no other environment through). */
async function withWeb(
  args: string[],
  body: (hub: MultiMCP) => Promise<void>,
  allowPrivate?: string,
): Promise<void> {
  const env: Record<string, string> =
    allowPrivate === undefined ? {} : { PDA_WEB_ALLOW_PRIVATE: allowPrivate };
  const hub = await MultiMCP.start({
    servers: [{ id: "web", command: process.execPath, args: [WEB_SERVER, ...args], env }],
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

describe("web server", () => {
  it("fetches pages as Markdown and reports clear errors (private addresses allowed)", async () => {
    await withWeb(
      ["--search-url", `${base}/searx`, "--search-kind", "searxng"],
      async (hub) => {
        const page = await hub.call("fetch_url_as_markdown", { url: `${base}/moved` });
        expect(page).toMatchObject({
          title: "An article",
          final_url: `${base}/article`,
          content_type: "text/html",
          markdown: "# Heading\n\nBody with a [link](/x).",
          truncated: false,
        });
        // Hostile HTML ends with a typed error (or a result) within the budget, and the server carries on.
        const hostile = await hub.call("fetch_url_as_markdown", { url: `${base}/hostile` }).then(
          (value) => ({ value }),
          (e: unknown) => ({ error: (e as Error).message }),
        );
        if ("error" in hostile) expect(hostile.error).toMatch(/nested too deeply|too complex to convert/);
        else expect(hostile.value).toMatchObject({ markdown: expect.stringContaining("deep") });
        expect(await hub.call("fetch_url_as_markdown", { url: `${base}/article` })).toMatchObject({
          title: "An article",
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
      },
      "1",
    );
  });

  it("refuses loopback, private and link-local addresses by default, before connecting", async () => {
    await withWeb(["--search-url", `${base}/searx`, "--search-kind", "searxng"], async (hub) => {
      const before = fixtureHits.length;
      const refusal = async (url: string) =>
        (await failure(hub.call("fetch_url_as_markdown", { url }))).message;
      expect(await refusal(`${base}/article`)).toBe(
        `web.fetch_url_as_markdown: refused to fetch ${base}/article: 127.0.0.1 (loopback) is not a public address. To allow it, ` +
          `start this server with PDA_WEB_ALLOW_PRIVATE=127.0.0.1:${port} (or a CIDR, or 1 for every address).`,
      );
      // A name is checked on the address it resolves to.
      expect(await refusal(`http://localhost:${port}/article`)).toMatch(
        `localhost resolves to 127.0.0.1 (loopback), not a public address. To allow it, start this server with PDA_WEB_ALLOW_PRIVATE=localhost:${port}`,
      );
      expect(await refusal(`http://[::1]:${port}/`)).toMatch(/: ::1 \(loopback\) is not a public address/);
      expect(await refusal(`http://[::ffff:127.0.0.1]:${port}/`)).toMatch(/::ffff:7f00:1 \(loopback\)/);
      expect(await refusal(`http://0x7f.1:${port}/`)).toMatch(/127\.0\.0\.1 \(loopback\)/);
      expect(await refusal("http://169.254.169.254/latest/meta-data/")).toMatch(
        /169\.254\.169\.254 \(link-local\) is not a public address.*PDA_WEB_ALLOW_PRIVATE=169\.254\.169\.254:80/,
      );
      expect(await refusal("http://10.1.2.3/")).toMatch(/10\.1\.2\.3 \(private\)/);
      expect(await refusal("http://[fd00::1]/")).toMatch(/fd00::1 \(unique-local\)/);
      expect(await refusal("file:///etc/passwd")).toMatch(
        /only http and https URLs can be fetched, not file:/,
      );
      expect(fixtureHits.length).toBe(before);
      // The search endpoint was chosen by whoever configured the server, not by the model: it is allowed,
      // for searches only.
      await hub.call("web_search", { query: "q" });
      expect(fixtureHits.slice(before)).toEqual(["/searx"]);
      expect(await refusal(`${base}/searx`)).toMatch(/127\.0\.0\.1 \(loopback\) is not a public address/);
    });
  });

  it("checks every redirect hop against the allow-list", async () => {
    await withWeb(
      [],
      async (hub) => {
        const page = (await hub.call("fetch_url_as_markdown", { url: `${base}/moved` })) as { title: string };
        expect(page.title).toBe("An article");
        // Allowed by the address the name resolves to.
        const byName = (await hub.call("fetch_url_as_markdown", {
          url: `http://localhost:${port}/article`,
        })) as {
          title: string;
        };
        expect(byName.title).toBe("An article");
        const toAdmin = await failure(hub.call("fetch_url_as_markdown", { url: `${base}/to-admin` }));
        expect(toAdmin.message).toBe(
          `web.fetch_url_as_markdown: refused to fetch http://127.0.0.1:${adminPort}/secret (redirected from ${base}/to-admin): ` +
            `127.0.0.1 (loopback) is not a public address. To allow it, start this server with ` +
            `PDA_WEB_ALLOW_PRIVATE=127.0.0.1:${adminPort} (or a CIDR, or 1 for every address).`,
        );
        const toMetadata = await failure(hub.call("fetch_url_as_markdown", { url: `${base}/to-metadata` }));
        expect(toMetadata.message).toMatch(
          /: refused to fetch http:\/\/169\.254\.169\.254\/latest\/meta-data\/ \(redirected from .*\): 169\.254\.169\.254 \(link-local\)/,
        );
        const toFile = await failure(hub.call("fetch_url_as_markdown", { url: `${base}/to-file` }));
        expect(toFile.message).toBe(
          `web.fetch_url_as_markdown: ${base}/to-file redirected to "file:///etc/passwd": only http and https URLs can be fetched, not file:`,
        );
        expect(
          (await failure(hub.call("fetch_url_as_markdown", { url: `http://localhost:${adminPort}/` })))
            .message,
        ).toMatch(/localhost resolves to 127\.0\.0\.1 \(loopback\)/);
        expect(adminHits).toEqual([]);
      },
      `127.0.0.1:${port}`,
    );
    // The same redirect with the admin port allowed too reaches it: the refusal above was the allow-list's.
    await withWeb(
      [],
      async (hub) => {
        const secret = (await hub.call("fetch_url_as_markdown", { url: `${base}/to-admin` })) as {
          markdown: string;
        };
        expect(secret.markdown).toBe("secret");
        expect(adminHits).toEqual(["/secret"]);
      },
      `127.0.0.1:${port}, 127.0.0.1:${adminPort}`,
    );
    adminHits.length = 0;
  });

  it("will not start with an unreadable PDA_WEB_ALLOW_PRIVATE", async () => {
    const hub = await MultiMCP.start({
      servers: [
        {
          id: "web",
          command: process.execPath,
          args: [WEB_SERVER],
          env: { PDA_WEB_ALLOW_PRIVATE: "10.0.0.0/99" },
        },
      ],
    });
    try {
      expect(hub.status()[0]).toMatchObject({ state: "failed" });
      expect(hub.status()[0]!.lastError).toMatch(/PDA_WEB_ALLOW_PRIVATE: not a CIDR: 10\.0\.0\.0\/99/);
    } finally {
      await hub.close();
    }
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
      "1",
    );
  });
});

describe("rate limit and egress policy together", () => {
  it("a URL the policy refuses uses none of its host's rate limit (through the hub)", async () => {
    // The fixture's host is the search endpoint, and refused for fetching: both share its rate limit of 2.
    await withWeb(
      ["--search-url", `${base}/searx`, "--search-kind", "searxng", "--rate", "0.01", "--burst", "2"],
      async (hub) => {
        for (let i = 0; i < 4; i++) {
          const e = await failure(hub.call("fetch_url_as_markdown", { url: `${base}/article` }));
          expect(e.message).toMatch(/refused to fetch .*127\.0\.0\.1 \(loopback\) is not a public address/);
        }
        await hub.call("web_search", { query: "a" });
        await hub.call("web_search", { query: "b" });
        const limited = await failure(hub.call("web_search", { query: "c" }));
        expect(limited.message).toMatch(/rate limit for 127\.0\.0\.1:\d+: too many requests/);
      },
    );
  });

  it("a name that resolves to a refused address uses none either; a DNS failure is the fetch's to report", async () => {
    const limiter = new RateLimiter(0.01, 1, 0);
    const names: Record<string, string[]> = { "intranet.test": ["93.184.215.14", "10.0.0.7"] };
    const egress = EgressPolicy.parse("", async (host) => {
      const found = names[host];
      if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
      return found.map((address) => ({ address, family: 4 }));
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const server = createWebServer({ limiter, egress });
    await server.connect(serverSide);
    const client = new Client({ name: "test", version: "0" });
    await client.connect(clientSide);
    try {
      const fetchUrl = async (url: string) => {
        const r = (await client.callTool({ name: "fetch_url_as_markdown", arguments: { url } })) as {
          isError?: boolean;
          content: Array<{ text: string }>;
        };
        expect(r.isError).toBe(true);
        return r.content[0]!.text;
      };
      for (let i = 0; i < 3; i++) {
        expect(await fetchUrl("http://intranet.test/wiki")).toMatch(
          /intranet\.test resolves to 10\.0\.0\.7 \(private\), not a public address/,
        );
      }
      // The host's one token is still there.
      await limiter.take("intranet.test");
      await expect(limiter.take("intranet.test")).rejects.toBeInstanceOf(RateLimited);
      // A name with no address is not refused early: it takes its token and the fetch says what went wrong.
      expect(await fetchUrl("http://nowhere.test/")).toMatch(/cannot resolve nowhere\.test \(ENOTFOUND\)/);
      expect(await fetchUrl("http://nowhere.test/")).toMatch(/rate limit for nowhere\.test/);
    } finally {
      await client.close();
      await server.close();
    }
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

describe("egress policy", () => {
  it("names the non-public range of an address, in its IPv4-mapped and NAT64 forms too", () => {
    const kinds = Object.fromEntries(
      [
        "8.8.8.8",
        "2606:4700:4700::1111",
        "127.0.0.2",
        "0.0.0.0",
        "10.0.0.1",
        "172.31.255.255",
        "172.32.0.1",
        "192.168.1.1",
        "100.100.100.200",
        "169.254.169.254",
        "224.0.0.1",
        "255.255.255.255",
        "::",
        "::1",
        "::ffff:10.0.0.1",
        "::ffff:8.8.8.8",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b::808:808",
        "fd12:3456::1",
        "fe80::1%eth0",
        "ff02::1",
        "not-an-ip",
      ].map((a) => [a, nonPublicKind(a) ?? "public"]),
    );
    expect(kinds).toEqual({
      "8.8.8.8": "public",
      "2606:4700:4700::1111": "public",
      "127.0.0.2": "loopback",
      "0.0.0.0": "unspecified",
      "10.0.0.1": "private",
      "172.31.255.255": "private",
      "172.32.0.1": "public",
      "192.168.1.1": "private",
      "100.100.100.200": "shared (carrier-grade NAT)",
      "169.254.169.254": "link-local",
      "224.0.0.1": "multicast",
      "255.255.255.255": "reserved",
      "::": "unspecified",
      "::1": "loopback",
      "::ffff:10.0.0.1": "private",
      "::ffff:8.8.8.8": "public",
      "64:ff9b::a9fe:a9fe": "link-local (NAT64)",
      "64:ff9b::808:808": "public",
      "fd12:3456::1": "unique-local",
      "fe80::1%eth0": "link-local",
      "ff02::1": "multicast",
      "not-an-ip": "unparsable",
    });
  });

  it("reads allow-lists and refuses what it cannot read", async () => {
    const allowed = async (spec: string, url: string, address: string) => {
      try {
        EgressPolicy.parse(spec).check(new URL(url), address);
        return true;
      } catch (e) {
        expect(e).toBeInstanceOf(UrlRefused);
        return false;
      }
    };
    expect(await allowed("", "http://h/", "10.0.0.1")).toBe(false);
    expect(await allowed("0", "http://h/", "10.0.0.1")).toBe(false);
    expect(await allowed("", "http://h/", "93.184.215.14")).toBe(true);
    expect(await allowed("1", "http://h/", "10.0.0.1")).toBe(true);
    expect(await allowed("10.0.0.0/8", "http://h/", "10.9.9.9")).toBe(true);
    expect(await allowed("10.0.0.0/8", "http://h/", "::ffff:10.9.9.9")).toBe(true);
    expect(await allowed("10.0.0.0/8", "http://h/", "192.168.0.1")).toBe(false);
    expect(await allowed("fd00::/8", "http://h/", "fd00::5")).toBe(true);
    expect(await allowed("intranet.example", "http://intranet.example:8080/", "10.0.0.1")).toBe(true);
    expect(await allowed("intranet.example", "http://other.example/", "10.0.0.1")).toBe(false);
    expect(await allowed("*.corp.example", "http://wiki.corp.example/", "10.0.0.1")).toBe(true);
    expect(await allowed("*.corp.example", "http://corp.example.evil/", "10.0.0.1")).toBe(false);
    expect(await allowed("localhost:8888", "http://localhost:8888/", "127.0.0.1")).toBe(true);
    expect(await allowed("localhost:8888", "http://localhost:8889/", "127.0.0.1")).toBe(false);
    expect(await allowed("[::1]:80", "http://[::1]/", "::1")).toBe(true);
    expect(await allowed("::1", "https://[::1]/", "::1")).toBe(true);
    expect(await allowed("127.0.0.1:443", "https://127.0.0.1/", "127.0.0.1")).toBe(true);
    for (const bad of ["10.0.0.0/33", "[10.0.0.1]", "host:0", "host:70000", "a b/c", "http://x/"]) {
      expect(() => EgressPolicy.parse(bad), bad).toThrow(/not|bad port/);
    }
  });

  it("connects to the address it checked, resolving once", async () => {
    const asked: string[] = [];
    const pinned = EgressPolicy.parse("pinned.test", async (host) => {
      asked.push(host);
      return [{ address: "127.0.0.1", family: 4 }];
    });
    // pinned.test exists only in this resolver: the page arriving shows the connection used its answer.
    const page = await fetchText(`http://pinned.test:${port}/plain`, { egress: pinned });
    expect(page.text).toMatch(/^just text/);
    expect(asked).toEqual(["pinned.test"]);
    // One private address among public ones refuses the name.
    const mixed = EgressPolicy.parse("", async () => [
      { address: "93.184.215.14", family: 4 },
      { address: "10.0.0.7", family: 4 },
    ]);
    await expect(fetchText(`http://mixed.test:${port}/plain`, { egress: mixed })).rejects.toThrow(
      /mixed\.test resolves to 10\.0\.0\.7 \(private\), not a public address/,
    );
  });
});
