/**
 * The hub against the official reference servers, installed as dev dependencies and spawned with `node`
 * and the package's bin script (no npx, no network): listing, calling, structured results, non-text
 * content, progress, elicitation, log messages and resources.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MultiMCP, type HubEvent } from "../../index.js";
import { gone, referenceServerBin, failure } from "./helpers.js";

let hub: MultiMCP;
let dir: string;
const events: HubEvent[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pda-hub-ref-"));
  writeFileSync(join(dir, "hello.txt"), "hello from a file\n");
  hub = await MultiMCP.start(
    {
      servers: [
        {
          id: "everything",
          command: process.execPath,
          args: [referenceServerBin("@modelcontextprotocol/server-everything"), "stdio"],
        },
        {
          id: "fs",
          command: process.execPath,
          args: [referenceServerBin("@modelcontextprotocol/server-filesystem"), dir],
          deny: ["move_file"],
          needs_approval: ["write_file"],
        },
        {
          id: "memory",
          command: process.execPath,
          args: [referenceServerBin("@modelcontextprotocol/server-memory")],
          env: { MEMORY_FILE_PATH: join(dir, "memory.jsonl") },
        },
      ],
    },
    { onEvent: (e) => events.push(e) },
  );
});

afterAll(async () => {
  const pids = hub.status().map((s) => s.pid);
  expect(pids.every((p) => typeof p === "number")).toBe(true);
  await hub.close();
  expect(await gone(pids)).toEqual([]);
  rmSync(dir, { recursive: true, force: true });
});

describe("reference servers over stdio", () => {
  it("connects all three in parallel and lists their tools", () => {
    expect(hub.status().map((s) => [s.id, s.state])).toEqual([
      ["everything", "ready"],
      ["fs", "ready"],
      ["memory", "ready"],
    ]);
    const names = hub.tools().map((t) => t.qualified);
    expect(names).toEqual(
      expect.arrayContaining([
        "everything.echo",
        "everything.get-sum",
        "fs.read_text_file",
        "memory.create_entities",
      ]),
    );
    for (const s of hub.status()) expect(s.tools).toBeGreaterThan(5);
  });

  it("applies deny and needs_approval from the config", () => {
    expect(hub.tools().some((t) => t.qualified === "fs.move_file")).toBe(false);
    expect(hub.tools().find((t) => t.qualified === "fs.write_file")?.needsApproval).toBe(true);
    expect(hub.tools().find((t) => t.qualified === "fs.read_text_file")?.needsApproval).toBeUndefined();
  });

  it("calls everything: text, structured content, non-text content", async () => {
    expect(await hub.call("echo", { message: "hi" })).toBe("Echo: hi");
    expect(await hub.call("everything.get-sum", { a: 2, b: 3 })).toMatch(/5/);
    const weather = await hub.call("get-structured-content", { location: "Chicago" });
    expect(weather).toEqual({
      temperature: expect.any(Number),
      conditions: expect.any(String),
      humidity: expect.any(Number),
    });
    const image = (await hub.call("get-tiny-image", {})) as { type: string; mimeType?: string }[];
    expect(image.map((c) => c.type)).toContain("image");
  });

  it("surfaces progress notifications of a long-running call", async () => {
    const before = events.length;
    await hub.call("trigger-long-running-operation", { duration: 0.3, steps: 3 });
    const progress = events.slice(before).filter((e) => e.type === "progress");
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress[0]).toMatchObject({
      server: "everything",
      tool: "trigger-long-running-operation",
      total: 3,
    });
  });

  it("declines elicitation with a reason by default; a handler can answer", async () => {
    const declined = await hub.call("trigger-elicitation-request", {});
    expect(String(declined)).toMatch(/declined/);
    expect(
      events.some(
        (e) => e.type === "elicitation" && e.action === "decline" && /no human channel/.test(e.reason ?? ""),
      ),
    ).toBe(true);
    const asked: string[] = [];
    hub.setElicitationHandler(async (server, request) => {
      asked.push(`${server}: ${request.message}`);
      const props = Object.keys(
        (request as { requestedSchema?: { properties?: object } }).requestedSchema?.properties ?? {},
      );
      const content: Record<string, string> = {};
      for (const p of props) content[p] = "x";
      return { action: "accept", content };
    });
    try {
      const accepted = await hub.call("trigger-elicitation-request", {});
      expect(asked).toHaveLength(1);
      expect(String(accepted)).not.toMatch(/declined/);
    } finally {
      hub.setElicitationHandler(undefined);
    }
  });

  it("lists and reads resources", async () => {
    const resources = await hub.listResources();
    expect(resources.length).toBeGreaterThan(0);
    const first = resources.find((r) => r.server === "everything")!;
    const read = await hub.readResource("everything", first.uri);
    expect(read.contents[0]).toMatchObject({ uri: first.uri });
    const bad = await failure(hub.readResource("nowhere", "x://y"));
    expect(bad.code).toBe("SERVER_UNAVAILABLE");
  });

  it("reads and writes files through server-filesystem; outside its root is a TOOL_ERROR", async () => {
    const read = await hub.call("fs.read_text_file", { path: join(dir, "hello.txt") });
    expect(read).toEqual({ content: "hello from a file\n" });
    await hub.call("write_file", { path: join(dir, "new.txt"), content: "written" });
    expect(await hub.call("read_text_file", { path: join(dir, "new.txt") })).toEqual({ content: "written" });
    const outside = await failure(hub.call("fs.read_text_file", { path: "/etc/hostname" }));
    expect(outside.code).toBe("TOOL_ERROR");
    expect(outside.message).toMatch(/denied|outside|not allowed/i);
  });

  it("validates arguments against the server's schema before sending", async () => {
    const e = await failure(hub.call("fs.write_file", { path: 42 }));
    expect(e.code).toBe("TOOL_INVALID_ARGS");
    expect(e.message).toMatch(/"path" must be string/);
    expect(e.message).toMatch(/missing required argument "content"/);
    const nested = await failure(hub.call("memory.create_entities", { entities: [{ name: "a" }] }));
    expect(nested.message).toMatch(/entities\.0/);
  });

  it("keeps state in server-memory across calls (the session stays open)", async () => {
    await hub.call("memory.create_entities", {
      entities: [{ name: "Ada", entityType: "person", observations: ["wrote the first program"] }],
    });
    const found = (await hub.call("search_nodes", { query: "Ada" })) as { entities: { name: string }[] };
    expect(found.entities.map((e) => e.name)).toEqual(["Ada"]);
  });

  it("fills schema defaults and keeps stderr lines as log events", async () => {
    expect(await hub.call("get-resource-links", {})).toEqual(expect.any(Array));
    expect(events.some((e) => e.type === "log" && e.server === "fs" && e.level === "stderr")).toBe(true);
  });
});
