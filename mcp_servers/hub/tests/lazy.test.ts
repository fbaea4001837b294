/**
 * Lazy start over the tool-list cache (the real store's tool_lists table): a server whose list is cached is
 * not started until one of its tools is called; the list is listed again when what defines the server
 * changes, when the server says its list changed, or on refresh; a server that will not start is reported
 * (status, availability, events) and retried at its next use after its backoff.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SessionStore } from "../../../memory/index.js";
import { MultiMCP, type HubConfigInput, type HubEvent, type SpawnFn } from "../../index.js";
import { toolListKey } from "../cache-key.js";
import { hubConfigFromObject } from "../config.js";
import { FAULT_SERVER, MATH_SERVER, failure, gone } from "./helpers.js";

let dir: string;
let store: SessionStore;
const hubs: MultiMCP[] = [];
const pids: number[] = [];
/** Spawns per server id (the last argument names the script, so count by it). */
let spawned: string[] = [];

const counting: SpawnFn = (command, args, options) => {
  const child = spawn(command, args, options);
  if (child.pid) pids.push(child.pid);
  spawned.push(args.some((a) => a === MATH_SERVER) ? "math" : "fault");
  return child;
};

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-lazy-"));
  store = SessionStore.open(join(dir, "pda.db"));
  spawned = [];
});
afterEach(async () => {
  for (const h of hubs.splice(0)) await h.close();
  expect(await gone(pids.splice(0))).toEqual([]);
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const config = (faultArgs: string[] = []): HubConfigInput => ({
  servers: [
    { id: "math", command: process.execPath, args: [MATH_SERVER] },
    { id: "fault", command: process.execPath, args: [FAULT_SERVER, ...faultArgs] },
  ],
});

async function start(cfg: HubConfigInput = config(), extra: { refresh?: boolean } = {}) {
  const events: HubEvent[] = [];
  const hub = await MultiMCP.start(cfg, {
    spawn: counting,
    cache: store.toolLists(),
    onEvent: (e) => events.push(e),
    ...extra,
  });
  hubs.push(hub);
  return { hub, events };
}

const states = (hub: MultiMCP) => Object.fromEntries(hub.status().map((s) => [s.id, s.state]));

async function until(condition: () => boolean, what: string, withinMs = 20_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("lazy start over the tool-list cache", () => {
  it("starts nothing whose list is cached, and only the server a call needs", async () => {
    const first = await start();
    expect(spawned.sort()).toEqual(["fault", "math"]);
    expect(states(first.hub)).toEqual({ math: "ready", fault: "ready" });
    const known = first.hub.tools().map((t) => t.qualified);
    await first.hub.close();

    spawned = [];
    const { hub } = await start();
    expect(spawned).toEqual([]);
    expect(states(hub)).toEqual({ math: "cached", fault: "cached" });
    // Names, descriptions and schemas as listed: the decision and the argument checks see the same tools.
    expect(hub.tools().map((t) => t.qualified)).toEqual(known);
    expect(hub.tools().find((t) => t.qualified === "math.add")?.inputSchema).toMatchObject({
      properties: { a: { type: "number" } },
    });
    expect(await hub.call("math.add", { a: 2, b: 3 })).toBe(5);
    expect(spawned).toEqual(["math"]);
    expect(states(hub)).toEqual({ math: "ready", fault: "cached" });
  });

  it("lists a server again when what defines it changes", async () => {
    await (await start()).hub.close();
    spawned = [];
    const { hub } = await start(config(["--banner"]));
    expect(spawned).toEqual(["fault"]);
    expect(states(hub)).toEqual({ math: "cached", fault: "ready" });
    const key = (args: string[]) => toolListKey(hubConfigFromObject(config(args)).servers[1]!);
    expect(key(["--banner"])).not.toBe(key([]));
    expect(store.toolLists().get(key(["--banner"]))?.server_name).toBe("pda-fault");
  });

  it("stores the new list when a server says its list changed", async () => {
    const { hub } = await start();
    const key = toolListKey(hubConfigFromObject(config()).servers[1]!);
    const names = () =>
      store
        .toolLists()
        .get(key)
        ?.tools.map((t) => t.name) ?? [];
    expect(names()).not.toContain("grown");
    await hub.call("fault.grow", {});
    await until(() => names().includes("grown"), "the grown tool in the cache");
    await hub.close();
    spawned = [];
    const again = await start();
    expect(spawned).toEqual([]);
    expect(again.hub.tools().map((t) => t.qualified)).toContain("fault.grown");
  });

  it("refresh starts every server whatever is cached", async () => {
    await (await start()).hub.close();
    spawned = [];
    const { hub } = await start(config(), { refresh: true });
    expect(spawned.sort()).toEqual(["fault", "math"]);
    expect(states(hub)).toEqual({ math: "ready", fault: "ready" });
  });

  it("a cached server that will not start is reported, and retried at its next use after its backoff", async () => {
    const broken = { id: "fault", command: process.execPath, args: [FAULT_SERVER, "--exit-at-start"] };
    const cfg = { servers: [{ id: "math", command: process.execPath, args: [MATH_SERVER] }, broken] };
    // Its list is known from an earlier run of the same definition.
    store.toolLists().put(toolListKey(hubConfigFromObject(cfg).servers[1]!), "fault", {
      tools: [{ name: "echo", description: "Echo the text back.", inputSchema: { type: "object" } }],
    });
    const { hub, events } = await start(cfg);
    expect(states(hub).fault).toBe("cached");
    expect(hub.availability().down).toEqual([]);

    const e = await failure(hub.call("fault.echo", { text: "hi" }));
    expect(e.code).toBe("SERVER_UNAVAILABLE");
    expect(e.message).toMatch(/exited with code 3/);
    expect(hub.availability()).toEqual({
      enabled: 2,
      down: [
        {
          server: "fault",
          description: "",
          reason: expect.stringMatching(/could not start: the process exited with code 3/),
          tools: ["echo"],
        },
      ],
    });
    expect(events).toContainEqual(
      expect.objectContaining({ type: "server_state", server: "fault", state: "failed" }),
    );

    const retryAt = hub.status().find((s) => s.id === "fault")!.retryAt!;
    await until(() => Date.now() >= retryAt, "the backoff to pass");
    await failure(hub.call("fault.echo", { text: "hi" }));
    expect(events).toContainEqual({ type: "server_state", server: "fault", state: "connecting", retry: 1 });
    expect(spawned.filter((s) => s === "fault")).toHaveLength(2);
  });
});
