/**
 * Roots (issue #22): server-filesystem started without directories waits for the client's roots; the hub
 * answers roots/list with the config's roots or its own (the working directory by default), and tells live
 * servers when its roots change. The real reference server over stdio.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MultiMCP } from "../../index.js";
import { referenceServerBin } from "./helpers.js";

const dir = realpathSync(mkdtempSync(join(tmpdir(), "pda-roots-")));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const a = join(dir, "a");
const b = join(dir, "b");
mkdirSync(a);
mkdirSync(b);
writeFileSync(join(a, "note.txt"), "from a");
writeFileSync(join(b, "note.txt"), "from b");

const filesystem = (extra: object = {}) => ({
  id: "fs",
  command: process.execPath,
  args: [referenceServerBin("@modelcontextprotocol/server-filesystem")],
  ...extra,
});

/** The text of a call's answer (server-filesystem answers in text). */
async function text(hub: MultiMCP, tool: string, args: object = {}): Promise<string> {
  const value = await hub.call(`fs.${tool}`, args as Record<string, unknown>);
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** Starts the hub, checks the server works in `only` and not in `not`, closes the hub. */
async function expectRoots(servers: object[], hubRoots: string[], only: string, not: string): Promise<void> {
  const hub = await MultiMCP.start({ servers } as never, { roots: hubRoots });
  try {
    const got = await allowed(hub, only);
    expect(got).toContain(only);
    expect(got).not.toContain(not);
  } finally {
    await hub.close();
  }
}

/** Polls until the server has taken the roots in (it asks roots/list after initialize or a change). */
async function allowed(hub: MultiMCP, want: string): Promise<string> {
  const until = Date.now() + 60_000;
  for (;;) {
    const got = await text(hub, "list_allowed_directories");
    if (got.includes(want) || Date.now() > until) return got;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("roots", () => {
  it("the hub's roots reach a server started without directories, and a change is notified", async () => {
    const hub = await MultiMCP.start({ servers: [filesystem()] }, { roots: [a] });
    try {
      expect(await allowed(hub, a)).toContain(a);
      expect(await text(hub, "read_text_file", { path: join(a, "note.txt") })).toContain("from a");
      hub.setRoots([b]);
      const now = await allowed(hub, b);
      expect(now).toContain(b);
      expect(now).not.toContain(a);
      expect(await text(hub, "read_text_file", { path: join(b, "note.txt") })).toContain("from b");
    } finally {
      await hub.close();
    }
  });

  it("a folder on a server's command line is its root (server-filesystem would otherwise lose it)", async () => {
    const server = filesystem();
    await expectRoots([{ ...server, args: [...server.args, b] }], [a], b, a);
  });

  it("a server's own roots in the config win over the hub's and stay when the hub's change", async () => {
    await expectRoots([filesystem({ roots: [b] })], [a], b, a);
  });
});
