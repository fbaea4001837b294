/**
 * Both protocol eras against every bundled server (the built bundles), with a real SDK v2 Client: over stdio and
 * over Streamable HTTP (`--http`), a 2025-era connection (`initialize`) and a 2026-07-28 one (pinned, so a
 * fallback cannot hide a missing modern era) list the same tools and get the same results. Over HTTP the
 * modern era has no session: the robot's episode must still carry from one request to the next. DNS-rebinding
 * protection refuses a foreign Host in both eras.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { request } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { afterAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../core/index.js";
import { gone } from "../hub/tests/helpers.js";

const tmp = mkdtempSync(join(tmpdir(), "pda-eras-"));
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  expect(await gone(children.map((c) => c.pid))).toEqual([]);
  rmSync(tmp, { recursive: true, force: true });
});

const script = (id: string) => join(PACKAGE_ROOT, `dist/mcp_servers/${id}/server.js`);

interface Case {
  id: string;
  args: string[];
  tool: string;
  arguments: Record<string, unknown>;
}

const CASES: Case[] = [
  { id: "math", args: [], tool: "add", arguments: { a: 32, b: 5 } },
  {
    id: "documents",
    args: ["--root", join(PACKAGE_ROOT, "mcp_servers/documents/samples"), "--db", ":memory:"],
    tool: "read_document",
    arguments: { path: "model_context_protocol.md", length: 200 },
  },
  // Offline-safe: the address policy refuses a loopback URL before any fetch, the same way in both eras.
  { id: "web", args: [], tool: "fetch_url_as_markdown", arguments: { url: "http://127.0.0.1:9/" } },
  { id: "robot", args: [], tool: "list_tasks", arguments: {} },
];

const ERAS = { legacy: "legacy", modern: { pin: "2026-07-28" } } as const;
type EraName = keyof typeof ERAS;

function client(era: EraName): Client {
  return new Client({ name: "eras-test", version: "1" }, { versionNegotiation: { mode: ERAS[era] } });
}

async function overStdio(c: Case, era: EraName): Promise<Client> {
  const cl = client(era);
  await cl.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [script(c.id), ...c.args],
      stderr: "ignore",
    }),
  );
  return cl;
}

/** Starts `c` with `--http` on a free loopback port; resolves to its /mcp URL. */
async function startHttp(c: Case): Promise<URL> {
  const child = spawn(process.execPath, [script(c.id), ...c.args, "--http", "127.0.0.1:0"], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  children.push(child);
  const lines = createInterface({ input: child.stdout! });
  return new Promise<URL>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${c.id} did not print its URL within 60 s`)), 60_000);
    lines.on("line", (line) => {
      const m = /^listening (\S+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(new URL(m[1]!));
      }
    });
    child.once("exit", (code) => reject(new Error(`${c.id} exited with ${code}`)));
  });
}

async function overHttp(url: URL, era: EraName): Promise<Client> {
  const cl = client(era);
  await cl.connect(new StreamableHTTPClientTransport(url));
  return cl;
}

/** A result without its `_meta` (the modern era stamps the server's identity there). */
function bare<T extends object>(result: T): Omit<T, "_meta"> {
  const { _meta, ...rest } = result as T & { _meta?: unknown };
  void _meta;
  return rest;
}

interface Seen {
  era: string | undefined;
  tools: unknown;
  result: unknown;
}

async function exercise(cl: Client, c: Case): Promise<Seen> {
  try {
    const { tools } = await cl.listTools();
    const result = bare(await cl.callTool({ name: c.tool, arguments: c.arguments }));
    return { era: cl.getProtocolEra(), tools, result };
  } finally {
    await cl.close();
  }
}

const SLOW = 120_000;

describe.each(CASES)("$id serves both eras", (c) => {
  it(
    "over stdio: the same tools and results in 2025 and 2026-07-28",
    async () => {
      const legacy = await exercise(await overStdio(c, "legacy"), c);
      const modern = await exercise(await overStdio(c, "modern"), c);
      expect([legacy.era, modern.era]).toEqual(["legacy", "modern"]);
      expect(modern.tools).toEqual(legacy.tools);
      expect(modern.result).toEqual(legacy.result);
      checkResult(c, legacy.result);
    },
    SLOW,
  );

  it(
    "over HTTP (--http): the same tools and results in 2025 and 2026-07-28",
    async () => {
      const url = await startHttp(c);
      const legacy = await exercise(await overHttp(url, "legacy"), c);
      const modern = await exercise(await overHttp(url, "modern"), c);
      expect([legacy.era, modern.era]).toEqual(["legacy", "modern"]);
      expect(modern.tools).toEqual(legacy.tools);
      expect(modern.result).toEqual(legacy.result);
      checkResult(c, legacy.result);
    },
    SLOW,
  );
});

/** What each server's one call must answer (so "identical" cannot mean "identically broken"). */
function checkResult(c: Case, result: unknown): void {
  const r = result as {
    isError?: boolean;
    content: { type: string; text: string }[];
    structuredContent?: unknown;
  };
  if (c.id === "math") expect(r.content).toEqual([{ type: "text", text: "37" }]);
  if (c.id === "documents") {
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ path: "model_context_protocol.md", start: 0, end: 200 });
  }
  if (c.id === "web") {
    expect(r.isError).toBe(true);
    expect(r.content[0]!.text).toMatch(/127\.0\.0\.1/);
  }
  if (c.id === "robot") {
    expect((r.structuredContent as { tasks: unknown[] }).tasks.length).toBeGreaterThan(0);
  }
}

describe("tool metadata is kept in the modern era", () => {
  it(
    "annotations and output schemas: robot moves are not idempotent, reads are read-only; documents keep output schemas",
    async () => {
      const robot = await overStdio(CASES[3]!, "modern");
      const docs = await overStdio(CASES[1]!, "modern");
      try {
        const tools = new Map((await robot.listTools()).tools.map((t) => [t.name, t]));
        expect(tools.get("move_to")?.annotations).toMatchObject({
          readOnlyHint: false,
          idempotentHint: false,
        });
        expect(tools.get("get_observation")?.annotations).toMatchObject({ readOnlyHint: true });
        const search = (await docs.listTools()).tools.find((t) => t.name === "search_stored_documents");
        expect(search?.outputSchema).toMatchObject({ type: "object", required: ["query", "results"] });
        expect(search?.annotations).toMatchObject({ readOnlyHint: true });
      } finally {
        await robot.close();
        await docs.close();
      }
    },
    SLOW,
  );
});

describe("robot over HTTP in the 2026-07-28 era (no session)", () => {
  it(
    "an episode started by one request is observed by the next",
    async () => {
      const url = await startHttp(CASES[3]!);
      const cl = await overHttp(url, "modern");
      try {
        const reset = await cl.callTool({ name: "reset", arguments: { task: "close_jar", seed: 3 } });
        expect(reset.isError, JSON.stringify(reset.content)).toBeFalsy();
        const obs = await cl.callTool({ name: "get_observation", arguments: {} });
        expect(obs.isError, JSON.stringify(obs.content)).toBeFalsy();
        expect(obs.structuredContent).toMatchObject({ objects: expect.any(Array) });
      } finally {
        await cl.close();
      }
    },
    SLOW,
  );
});

/** A raw POST to 127.0.0.1:port with the given headers (fetch cannot set Host). */
function post(
  url: URL,
  headers: Record<string, string>,
  body: unknown,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...headers,
        },
      },
      (res) => {
        let text = "";
        res.on("data", (b: Buffer) => (text += b.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.once("error", reject);
    req.end(JSON.stringify(body));
  });
}

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "t", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {},
};
const BODIES = {
  legacy: {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
  },
  modern: { jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: META } },
};

describe("DNS-rebinding protection in both eras (math --http)", () => {
  it.each(["legacy", "modern"] as const)(
    "%s: a foreign Host or Origin is refused with 403, loopback is served",
    async (era) => {
      const url = await startHttp(CASES[0]!);
      const extra: Record<string, string> =
        era === "modern" ? { "mcp-protocol-version": "2026-07-28", "mcp-method": "server/discover" } : {};
      const evil = await post(url, { ...extra, host: "evil.example.com" }, BODIES[era]);
      expect(evil.status).toBe(403);
      expect(evil.text).toMatch(/DNS-rebinding/);
      const origin = await post(
        url,
        { ...extra, host: url.host, origin: "http://evil.example.com" },
        BODIES[era],
      );
      expect(origin.status).toBe(403);
      const ok = await post(url, { ...extra, host: url.host }, BODIES[era]);
      expect(ok.status, ok.text).toBe(200);
      expect(ok.text).toContain("pda-math");
    },
    SLOW,
  );
});
