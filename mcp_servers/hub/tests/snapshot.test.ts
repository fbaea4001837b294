/**
 * Start-up snapshots of the bundled servers (hub/snapshot.ts, built by snapshot-build.ts in `npm run build`):
 * a bundled server configured as `node <its bundle>` is started from its blob and answers as from its bundle;
 * a blob that V8 refuses at start (other V8 flags: exit code 14) is given up for that server, which then
 * starts from its bundle at once; and no blob is used where one cannot fit.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { distPath } from "../../../core/index.js";
import {
  MultiMCP,
  SNAPSHOT_DIR,
  SNAPSHOT_MANIFEST,
  snapshotLaunch,
  type HubEvent,
  type SpawnFn,
} from "../../index.js";
import { DOCUMENTS_SERVER, MATH_SERVER, WEB_SERVER, gone } from "./helpers.js";

const manifestPath = distPath(join(SNAPSHOT_DIR, SNAPSHOT_MANIFEST));
// `npm run build` builds the blobs; only PDA_SNAPSHOTS=0 at build time leaves them out.
const built = process.env.PDA_SNAPSHOTS !== "0";

const hubs: MultiMCP[] = [];
const children: ChildProcess[] = [];
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-snapshot-"));
});
afterEach(async () => {
  for (const h of hubs.splice(0)) await h.close();
  expect(await gone(children.splice(0).map((c) => c.pid))).toEqual([]);
  rmSync(dir, { recursive: true, force: true });
});

/** Spawns as the hub asks, keeping each child; `extra` V8 flags go before a blob (to make V8 refuse it). */
const recording =
  (extra: string[] = []): SpawnFn =>
  (command, args, options) => {
    const child = spawn(command, args[0] === "--snapshot-blob" ? [...extra, ...args] : args, options);
    children.push(child);
    return child;
  };

// NUL-separated, with a NUL at the end.
const cmdline = (c: ChildProcess) => readFileSync(`/proc/${c.pid}/cmdline`, "utf8").split("\0").slice(0, -1);

describe.runIf(built)("bundled servers from their start-up snapshots", () => {
  it("the build wrote a blob for every bundled server, for this Node", () => {
    expect(existsSync(manifestPath), `${manifestPath} (npm run build writes it)`).toBe(true);
    const m = JSON.parse(readFileSync(manifestPath, "utf8")) as { node: string; servers: object };
    expect(m.node).toBe(process.version);
    expect(Object.keys(m.servers).sort()).toEqual(["documents", "math", "robot", "web"]);
  });

  it("a bundled server configured as `node <bundle>` starts from its blob and answers as from its bundle", async () => {
    const events: HubEvent[] = [];
    const hub = await MultiMCP.start(
      {
        servers: [
          { id: "math", command: "node", args: [MATH_SERVER] },
          { id: "web", command: "node", args: [WEB_SERVER] },
          // SQLite's native part is loaded after the snapshot was taken, at the first database opened.
          { id: "documents", command: "node", args: [DOCUMENTS_SERVER, "--db", join(dir, "documents.db")] },
        ],
      },
      { spawn: recording(), onEvent: (e) => events.push(e) },
    );
    hubs.push(hub);
    expect(await hub.call("math.add", { a: 2, b: 40 })).toBe(42);
    const refused = await hub
      .call("web.fetch_url_as_markdown", { url: "http://127.0.0.1:9/" })
      .catch((e: Error) => e);
    expect(String(refused)).toMatch(/not a public address/);
    const found = (await hub.call("documents.search_stored_documents", { query: "gripper" })) as {
      results: { path: string }[];
    };
    expect(found.results.map((r) => r.path)).toContain("tabletop_robot_safety.txt");
    expect(children).toHaveLength(3);
    for (const [child, script] of [
      [children[0]!, MATH_SERVER],
      [children[1]!, WEB_SERVER],
      [children[2]!, DOCUMENTS_SERVER],
    ] as const) {
      const argv = cmdline(child);
      expect(argv[0]).toBe(process.execPath);
      expect(argv.slice(1, 4)).toEqual(["--snapshot-blob", expect.stringMatching(/\.blob$/), script]);
    }
    // No warnings from Node about the snapshot at each start (documents says what it indexed: that is all).
    const stderr = events.flatMap((e) => (e.type === "log" && e.level === "stderr" ? [String(e.data)] : []));
    expect(stderr.filter((l) => !/^documents: \d+ documents in /.test(l))).toEqual([]);
  });

  it("a blob V8 refuses at start is given up: the server starts from its bundle at once, and says so", async () => {
    const events: HubEvent[] = [];
    const hub = await MultiMCP.start(
      { servers: [{ id: "math", command: "node", args: [MATH_SERVER] }] },
      // Other V8 flags than the blob was built with: V8 refuses it and the process exits with code 14.
      { spawn: recording(["--max-semi-space-size=4"]), onEvent: (e) => events.push(e) },
    );
    hubs.push(hub);
    expect(await hub.call("math.multiply", { a: 6, b: 7 })).toBe(42);
    expect(children).toHaveLength(2);
    expect(children[0]!.exitCode).toBe(14);
    expect(cmdline(children[1]!).slice(1)).toEqual([MATH_SERVER]);
    const warning = events.find((e) => e.type === "log" && e.level === "warning");
    expect(warning).toMatchObject({ server: "math" });
    expect(String((warning as { data: unknown }).data)).toMatch(
      /start-up snapshot failed.*exited with code 14/,
    );
    expect(hub.status().find((s) => s.id === "math")).toMatchObject({ state: "ready" });
  });
});

describe("when no blob is used", () => {
  const node = { command: "node", args: [MATH_SERVER] };
  it.runIf(built)("the plain case has one (the cases below differ from it in one thing each)", () => {
    expect(snapshotLaunch(node, {}, undefined)?.args[0]).toBe("--snapshot-blob");
  });
  it("NODE_OPTIONS reaches the server (its V8 flags would not fit the blob)", () => {
    expect(snapshotLaunch(node, { NODE_OPTIONS: "--max-old-space-size=100" }, undefined)).toBeUndefined();
  });
  it("PDA_SNAPSHOTS=0 in the server's environment", () => {
    expect(snapshotLaunch(node, { PDA_SNAPSHOTS: "0" }, undefined)).toBeUndefined();
  });
  it("another program, or a Node binary named by another path", () => {
    expect(snapshotLaunch({ command: "python3", args: [MATH_SERVER] }, {}, undefined)).toBeUndefined();
    expect(
      snapshotLaunch({ command: "/opt/other/bin/node", args: [MATH_SERVER] }, {}, undefined),
    ).toBeUndefined();
  });
  it("a script that is not a bundled server's bundle, or node with an option first", () => {
    expect(
      snapshotLaunch(
        { command: "node", args: [distPath("mcp_servers/testing/fault_server.js")] },
        {},
        undefined,
      ),
    ).toBeUndefined();
    expect(
      snapshotLaunch({ command: "node", args: ["--inspect", MATH_SERVER] }, {}, undefined),
    ).toBeUndefined();
  });
  it.runIf(built)("a relative path is resolved against the server's folder", () => {
    expect(
      snapshotLaunch({ command: "node", args: ["server.js"] }, {}, distPath("mcp_servers/documents"))
        ?.args[2],
    ).toBe(DOCUMENTS_SERVER);
  });
});
