/**
 * The hub against deliberately broken servers (mcp_servers/testing/fault_server): each fault ends in a
 * typed error within its timeout, the hub recovers for the next call, and no process is left behind.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { ToolError } from "../../../core/index.js";
import { MultiMCP, type HubEvent, type MultiMCPOptions, type SpawnFn } from "../../index.js";
import { FAULT_SERVER, MATH_SERVER, gone, failure, until } from "./helpers.js";

interface Harness {
  hub: MultiMCP;
  pids: number[];
  events: HubEvent[];
}
const open: Harness[] = [];

afterEach(async () => {
  for (const h of open.splice(0)) {
    await h.hub.close();
    expect(await gone(h.pids), "processes left behind").toEqual([]);
  }
});

async function start(
  faultArgs: string[] = [],
  server: Record<string, unknown> = {},
  opts: MultiMCPOptions = {},
) {
  const pids: number[] = [];
  const events: HubEvent[] = [];
  const counting: SpawnFn = (command, args, options) => {
    const child: ChildProcess = spawn(command, args, options);
    if (child.pid) pids.push(child.pid);
    return child;
  };
  const hub = await MultiMCP.start(
    {
      servers: [
        { id: "math", command: process.execPath, args: [MATH_SERVER] },
        {
          id: "fault",
          command: process.execPath,
          args: [FAULT_SERVER, ...faultArgs],
          timeout_ms: 800,
          ...server,
        },
      ],
    },
    { spawn: counting, onEvent: (e) => events.push(e), ...opts },
  );
  const h = { hub, pids, events };
  open.push(h);
  return h;
}

const state = (hub: MultiMCP, id: string) => hub.status().find((s) => s.id === id)!;

describe("fault servers", () => {
  it("a server that exits at start is reported; the others work", async () => {
    const { hub, pids } = await start(["--exit-at-start"]);
    const s = state(hub, "fault");
    expect(s.state).toBe("failed");
    expect(s.lastError).toMatch(/exited with code 3/);
    expect(s.lastError).toMatch(/refusing to start/);
    expect(await hub.call("add", { a: 2, b: 2 })).toBe(4);
    const e = await failure(hub.call("fault.echo", { text: "x" }));
    expect(e.code).toBe("SERVER_UNAVAILABLE");
    expect(e.tool).toBe("fault.echo");
    expect(await gone(pids.slice(1))).toEqual([]);
  });

  it("a command that does not exist is reported as such", async () => {
    const { hub } = await start([], { command: "pda-no-such-command", args: [] });
    expect(state(hub, "fault").lastError).toBe(
      'could not start: cannot run "pda-no-such-command": command not found',
    );
    expect(state(hub, "math").state).toBe("ready");
  });

  it("a server behind a shell wrapper is ended with the wrapper", async () => {
    // `; true` keeps sh from exec-ing node, so the server is a grandchild of the hub.
    const script = `"${process.execPath}" "${FAULT_SERVER}"; true`;
    const { hub, pids } = await start([], { command: "/bin/sh", args: ["-c", script] });
    const server = (await hub.call("fault.pid", {})) as number;
    expect(pids).not.toContain(server);
    // Wedge the server: it ignores the end of stdin, and a SIGTERM to sh alone would orphan it.
    const spinning = hub.call("spin", {}, { timeoutMs: 600_000 }).catch((e: unknown) => e);
    // The idle server sleeps; once it runs (state R in /proc) it has the call: it spins from then on.
    const running = () => readFileSync(`/proc/${server}/stat`, "utf8").split(") ")[1]?.startsWith("R");
    await until(() => running() === true, "the server to spin");
    await hub.close();
    expect(await spinning).toBeInstanceOf(ToolError);
    expect(await gone([...pids, server])).toEqual([]);
  });

  it("a crash mid-call fails that call with SERVER_CRASHED, never replays it, and restarts on next use", async () => {
    const { hub, pids } = await start();
    const first = await hub.call("fault.pid", {});
    const e = await failure(hub.call("crash", {}));
    expect(e.code).toBe("SERVER_CRASHED");
    expect(e.message).toMatch(/exit(ed with)? code 7/);
    expect(state(hub, "fault").state).toBe("crashed");
    expect(await hub.call("echo", { text: "back" })).toBe("back");
    const second = await hub.call("fault.pid", {});
    expect(second).not.toBe(first);
    // One restart, and the crashing call was not sent again (it would have crashed the new process).
    expect(pids).toHaveLength(3);
    expect(state(hub, "fault")).toMatchObject({ state: "ready", restarts: 1 });
    expect(await gone([first as number])).toEqual([]);
  });

  it("a hanging call times out with TOOL_TIMEOUT and the server is told to cancel", async () => {
    const { hub, pids } = await start();
    const e = await failure(hub.call("hang", {}, { timeoutMs: 300 }));
    expect(e.code).toBe("TOOL_TIMEOUT");
    expect(e.message).toMatch(/300 ms/);
    // The server answered the probe, so it keeps running and counts the cancellation it received.
    expect(await hub.call("stats", {})).toMatchObject({ cancellations: 1 });
    expect(pids).toHaveLength(2);
  });

  it("a server wedged in a busy loop is killed after the timeout and restarted for the next call", async () => {
    const { hub, pids } = await start();
    const wedged = (await hub.call("fault.pid", {})) as number;
    const e = await failure(hub.call("spin", {}, { timeoutMs: 300 }));
    expect(e.code).toBe("TOOL_TIMEOUT");
    expect(await hub.call("echo", { text: "alive" })).toBe("alive");
    expect(await hub.call("fault.pid", {})).not.toBe(wedged);
    expect(await gone([wedged])).toEqual([]);
    expect(pids).toHaveLength(3);
  });

  it("garbage on stdout is reported as events; the call times out and the server still works", async () => {
    const { hub, events } = await start();
    const e = await failure(hub.call("garbage", {}, { timeoutMs: 300 }));
    expect(e.code).toBe("TOOL_TIMEOUT");
    const junk = events.filter((ev) => ev.type === "garbage");
    expect(junk.length).toBeGreaterThanOrEqual(3);
    expect(junk[0]).toMatchObject({ server: "fault", line: "this is not json" });
    expect(await hub.call("echo", { text: "still here" })).toBe("still here");
  });

  it("a server that only writes garbage fails to connect within connect_timeout_ms", async () => {
    const { hub, pids } = await start(["--garbage-only"], { connect_timeout_ms: 700 });
    const s = state(hub, "fault");
    expect(s.state).toBe("failed");
    // It writes garbage as fast as it can: busy, so either the wall clock or its CPU time (startwait.ts) gives out
    // first, depending on how much of a core it gets.
    expect(s.lastError).toMatch(/no answer to initialize (within 700 ms|after \d+ ms of CPU time)/);
    expect(await gone(pids.slice(1))).toEqual([]);
    expect(await hub.call("add", { a: 1, b: 1 })).toBe(2);
  });

  it("a banner on stdout does not stop a server from working", async () => {
    // A call timeout a loaded machine cannot miss: the test is about the banner, not the timeout.
    const { hub, events } = await start(["--banner"], { timeout_ms: 30_000 });
    expect(await hub.call("echo", { text: "ok" })).toBe("ok");
    await until(() => events.some((e) => e.type === "garbage" && /banner/.test(e.line)), "the banner event");
  });

  it("a slow answer within the timeout succeeds with progress; beyond it, TOOL_TIMEOUT then recovery", async () => {
    const { hub, events } = await start();
    expect(await hub.call("slow", { ms: 200, steps: 4 }, { timeoutMs: 3000 })).toEqual({ waited: 200 });
    // The SDK drops a progress notification that arrives in the same read as the response, so the last
    // one may be missing; the earlier ones must be there, in order, with their total and message.
    const progress = events.filter((e) => e.type === "progress") as Extract<HubEvent, { type: "progress" }>[];
    expect(progress.length).toBeGreaterThanOrEqual(2);
    progress.forEach((p, i) =>
      expect(p).toMatchObject({
        server: "fault",
        tool: "slow",
        progress: i + 1,
        total: 4,
        message: `step ${i + 1} of 4`,
      }),
    );
    const e = await failure(hub.call("slow", { ms: 5000 }, { timeoutMs: 300 }));
    expect(e.code).toBe("TOOL_TIMEOUT");
    expect(await hub.call("echo", { text: "next" })).toBe("next");
  });

  it("the config timeout caps a call's own timeout", async () => {
    const { hub } = await start([], { timeout_ms: 250 });
    const e = await failure(hub.call("hang", {}, { timeoutMs: 60_000 }));
    expect(e.code).toBe("TOOL_TIMEOUT");
    expect(e.message).toMatch(/250 ms/);
  });

  it("a caller's abort signal cancels the call with TOOL_CANCELLED", async () => {
    const { hub } = await start();
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("step budget")), 100);
    const e = await failure(hub.call("hang", {}, { signal: controller.signal, timeoutMs: 5000 }));
    expect(e.code).toBe("TOOL_CANCELLED");
    expect(e.message).toMatch(/step budget/);
    expect(await hub.call("stats", {})).toMatchObject({ cancellations: 1 });
  });

  it("one signal shared by many calls cancels only the call still in flight, with one notice", async () => {
    const { hub } = await start();
    const step = new AbortController();
    for (let i = 0; i < 20; i++) {
      expect(await hub.call("echo", { text: `${i}` }, { signal: step.signal })).toBe(`${i}`);
    }
    const hanging = failure(hub.call("hang", {}, { signal: step.signal, timeoutMs: 5000 }));
    setTimeout(() => step.abort(new Error("the step ended")), 100);
    const e = await hanging;
    expect(e.code).toBe("TOOL_CANCELLED");
    expect(e.message).toMatch(/the step ended/);
    // The 20 finished calls got no cancellation notice; the hanging one got exactly one and stopped.
    expect(await hub.call("stats", {})).toMatchObject({ cancellations: 1, cancel_notices: 1 });
    expect(await hub.call("echo", { text: "after" })).toBe("after");
  });

  it("restarts back off: a server that keeps dying at start is not respawned in a loop", async () => {
    let now = 1_000_000;
    const clock = { now: () => now, iso: () => new Date(now).toISOString(), sleep: async () => {} };
    const { hub, pids } = await start(["--exit-at-start"], {}, { clock });
    expect(pids).toHaveLength(2);
    const early = await failure(hub.call("fault.echo", { text: "x" }));
    expect(early.message).toMatch(/next restart allowed in 500 ms/);
    expect(pids).toHaveLength(2);
    now += 500;
    await failure(hub.call("fault.echo", { text: "x" }));
    expect(pids).toHaveLength(3);
    const later = await failure(hub.call("fault.echo", { text: "x" }));
    expect(later.message).toMatch(/next restart allowed in 1000 ms/);
    expect(state(hub, "fault").restarts).toBe(1);
  });

  it("server log messages and tool list changes reach the hub", async () => {
    const { hub, events } = await start();
    await hub.call("fault.log", { level: "warning", message: "disk almost full" });
    expect(events).toContainEqual({
      type: "log",
      server: "fault",
      level: "warning",
      logger: "fault",
      data: "disk almost full",
    });
    expect(hub.tools().some((t) => t.name === "grown")).toBe(false);
    await hub.call("grow", {});
    const deadline = Date.now() + 5000;
    while (!hub.tools().some((t) => t.name === "grown") && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    expect(await hub.call("grown", {})).toBe("grown");
  });

  it("every call is recorded, failures with their error kind", async () => {
    const { hub } = await start();
    const records: unknown[] = [];
    hub.onCall((r) => records.push(r));
    await hub.call("echo", { text: "abc" });
    await failure(hub.call("hang", {}, { timeoutMs: 200 }));
    await failure(hub.call("echo", { text: 5 }));
    expect(records).toEqual([
      expect.objectContaining({ server: "fault", tool: "echo", ok: true, bytes: expect.any(Number) }),
      expect.objectContaining({ server: "fault", tool: "hang", ok: false, error_kind: "TOOL_TIMEOUT" }),
      expect.objectContaining({ server: "fault", tool: "echo", ok: false, error_kind: "TOOL_INVALID_ARGS" }),
    ]);
    expect((records[0] as { bytes: number }).bytes).toBeGreaterThan(0);
  });
});
