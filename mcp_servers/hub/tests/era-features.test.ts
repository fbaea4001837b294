/**
 * Everything the hub does with a server, in both MCP eras (issue #22): progress, server logging, cancellation
 * by the caller's signal, tool list changes, elicitation answered by a (scripted) human channel, sampling and
 * roots. One SDK v2 server (mcp_servers/testing/modern_server) run four ways: the 2026-07-28 era over stdio and
 * Streamable HTTP, and the 2025 era over both (the same server answers a 2025 client with server→client
 * requests where a modern one gets `input_required` results). The same assertions for each; the SDK v1
 * servers of the 2025-era tests (faults, sampling, roots) keep their own files.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ScriptedChannel, toElicitResult } from "../../../hil/index.js";
import { MultiMCP, type HubEvent, type SamplingHandler } from "../../index.js";
import { FAULT_SERVER, MODERN_SERVER, failure, gone, listeningUrl, until } from "./helpers.js";

const children: ChildProcess[] = [];
const dir = realpathSync(mkdtempSync(join(tmpdir(), "pda-era-features-")));
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  expect(await gone(children.map((c) => c.pid))).toEqual([]);
  rmSync(dir, { recursive: true, force: true });
});

/** A server of its own over HTTP (its list change and counters are per process). */
async function httpServer(script = MODERN_SERVER): Promise<string> {
  const child = spawn(process.execPath, [script, "--http", "127.0.0.1:0"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  return listeningUrl(child, "modern");
}

type Protocol = "2025" | "2026-07-28";
/**
 * `session`: the server keeps a session, so it can reach the client between a request and its answer (a
 * question, a list change) and match a 2025 `notifications/cancelled` to its request. SDK v2's HTTP handler
 * serves a 2025 client one stateless request at a time, so it cannot (the 2026-07-28 era needs no session:
 * its questions are `input_required` results and a cancel closes the request's stream); those features of the
 * 2025 era over HTTP are proven with an SDK v1 server, which keeps a session (the last describe below).
 */
const ways: {
  name: string;
  protocol: Protocol;
  http: boolean;
  era: "modern" | "legacy";
  session: boolean;
}[] = [
  { name: "2026-07-28 over stdio", protocol: "2026-07-28", http: false, era: "modern", session: true },
  { name: "2026-07-28 over HTTP", protocol: "2026-07-28", http: true, era: "modern", session: true },
  { name: "2025 over stdio", protocol: "2025", http: false, era: "legacy", session: true },
  { name: "2025 over HTTP", protocol: "2025", http: true, era: "legacy", session: false },
];

/** Polls an async condition (a call to the server) until it holds; fails naming `what` after a generous wait. */
async function eventually(condition: () => Promise<boolean>, what: string, withinMs = 30_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let hub: MultiMCP | undefined;
afterEach(async () => {
  await hub?.close();
  hub = undefined;
});

describe.each(ways)("the hub with a server speaking $name", ({ protocol, http, era, session }) => {
  async function start(extra: Record<string, unknown> = {}, roots?: string[]) {
    const where = http ? { url: await httpServer() } : { command: process.execPath, args: [MODERN_SERVER] };
    const events: HubEvent[] = [];
    hub = await MultiMCP.start(
      { servers: [{ id: "s", ...where, protocol, timeout_ms: 30_000, ...extra }] },
      { onEvent: (e) => events.push(e), ...(roots && { roots }) },
    );
    expect(hub.status()[0]).toMatchObject({ state: "ready", era });
    return { hub, events };
  }
  const stats = async (h: MultiMCP) =>
    (await h.call("s.stats", {})) as { calls: number; cancellations: number };

  it("shows a call's progress notifications, in order, with their total and message", async () => {
    const { hub, events } = await start();
    expect(await hub.call("s.slow", { ms: 200, steps: 4 })).toEqual({ waited: 200 });
    // The last notification may arrive in the same read as the answer and be dropped (faults.test.ts).
    const progress = events.filter((e) => e.type === "progress");
    expect(progress.length).toBeGreaterThanOrEqual(2);
    progress.forEach((p, i) =>
      expect(p).toEqual({
        type: "progress",
        server: "s",
        tool: "slow",
        progress: i + 1,
        total: 4,
        message: `step ${i + 1} of 4`,
      }),
    );
  });

  it("passes on the server's log messages, every level", async () => {
    const { hub, events } = await start();
    for (const level of ["debug", "warning"]) {
      expect(await hub.call("s.log", { level, message: `a ${level} line` })).toBe("logged");
    }
    await until(() => events.filter((e) => e.type === "log" && e.level !== "stderr").length >= 2, "two logs");
    expect(events.filter((e) => e.type === "log" && e.level !== "stderr")).toEqual([
      { type: "log", server: "s", level: "debug", logger: "modern", data: "a debug line" },
      { type: "log", server: "s", level: "warning", logger: "modern", data: "a warning line" },
    ]);
  });

  it.runIf(session)(
    "a call cancelled by the caller's signal fails with TOOL_CANCELLED and the server sees it cancelled",
    async () => {
      const { hub } = await start();
      const before = await stats(hub);
      const step = new AbortController();
      const hanging = failure(hub.call("s.hang", {}, { signal: step.signal }));
      // Abort only once the server runs the call, so the cancellation has something to reach.
      await eventually(async () => (await stats(hub)).calls > before.calls, "the server to run the call");
      step.abort(new Error("the step ended"));
      const e = await hanging;
      expect(e.code).toBe("TOOL_CANCELLED");
      expect(e.message).toMatch(/the step ended/);
      await eventually(
        async () => (await stats(hub)).cancellations > before.cancellations,
        "the server to see the cancellation",
      );
      expect((await stats(hub)).cancellations).toBe(before.cancellations + 1);
      expect(await hub.call("s.echo", { text: "after" })).toBe("after");
    },
  );

  it.runIf(session)(
    "a call that times out fails with TOOL_TIMEOUT, the server sees it cancelled, and still answers",
    async () => {
      const { hub } = await start();
      const before = await stats(hub);
      const e = await failure(hub.call("s.hang", {}, { timeoutMs: 300 }));
      expect(e.code).toBe("TOOL_TIMEOUT");
      await eventually(
        async () => (await stats(hub)).cancellations > before.cancellations,
        "the server to see the cancellation",
      );
      expect(await hub.call("s.echo", { text: "alive" })).toBe("alive");
      expect(hub.status()[0]).toMatchObject({ state: "ready", restarts: 0 });
    },
  );

  it.runIf(session)("lists a tool the server adds at run time", async () => {
    const { hub } = await start();
    expect(hub.tools().some((t) => t.qualified === "s.extra")).toBe(false);
    expect(await hub.call("s.grow", {})).toBe("grown");
    await until(() => hub.tools().some((t) => t.qualified === "s.extra"), "the new tool to be listed");
    expect(await hub.call("s.extra", {})).toBe("extra here");
  });

  it.runIf(session)("a form the server asks for is answered by the human channel", async () => {
    const { hub, events } = await start();
    const human = new ScriptedChannel({
      elicitation: [
        { action: "accept", content: { ok: true, note: "fine" }, expect: "Go ahead with deploy?" },
      ],
    });
    const asked: unknown[] = [];
    hub.setElicitationHandler(async (server, request) => {
      const question = {
        kind: "elicitation" as const,
        server,
        message: request.message,
        requestedSchema:
          "requestedSchema" in request
            ? request.requestedSchema
            : { type: "object" as const, properties: {} },
      };
      asked.push(question);
      return toElicitResult(await human.ask(question));
    });
    expect(await hub.call("s.confirm", { action: "deploy" })).toEqual({
      action: "deploy",
      confirmed: true,
      note: "fine",
    });
    expect(asked).toEqual([
      {
        kind: "elicitation",
        server: "s",
        message: "Go ahead with deploy?",
        requestedSchema: expect.objectContaining({
          type: "object",
          properties: expect.objectContaining({ ok: expect.anything() }),
        }),
      },
    ]);
    expect(human.unconsumed()).toEqual([]);
    expect(events.filter((e) => e.type === "elicitation")).toEqual([
      { type: "elicitation", server: "s", message: "Go ahead with deploy?", action: "accept" },
    ]);
  });

  it.runIf(session)(
    "sampling: the attached model answers with the server's policy; without one, or denied, a refusal",
    async () => {
      const { hub, events } = await start({ sampling: "allow" });
      await expect(hub.call("s.ask_model", { question: "2 + 2?" })).rejects.toThrow(
        /no model is attached to this hub/,
      );
      const seen: unknown[] = [];
      const handler: SamplingHandler = async (server, request, { policy }) => {
        seen.push({ server, policy, text: request.messages[0]!.content, maxTokens: request.maxTokens });
        return { role: "assistant", content: { type: "text", text: "4" }, model: "test-model" };
      };
      hub.setSamplingHandler(handler);
      expect(await hub.call("s.ask_model", { question: "2 + 2?" })).toEqual({
        answer: "4",
        model: "test-model",
      });
      expect(seen).toEqual([
        { server: "s", policy: "allow", text: { type: "text", text: "2 + 2?" }, maxTokens: 200 },
      ]);
      expect(events.filter((e) => e.type === "sampling").map((e) => e.type === "sampling" && e.ok)).toEqual([
        false,
        true,
      ]);
    },
  );

  it.runIf(session)(
    "without a human channel a form is declined, with the reason, and the call goes on",
    async () => {
      const { hub, events } = await start();
      expect(await hub.call("s.confirm", { action: "deploy" })).toEqual({
        action: "deploy",
        confirmed: false,
        answer: "decline",
      });
      expect(events.filter((e) => e.type === "elicitation")).toEqual([
        {
          type: "elicitation",
          server: "s",
          message: "Go ahead with deploy?",
          action: "decline",
          reason: "no human channel is attached to this hub, so the request was declined",
        },
      ]);
    },
  );

  it.runIf(session)("`sampling: deny` refuses without asking the model", async () => {
    const { hub } = await start({ sampling: "deny" });
    let asked = 0;
    hub.setSamplingHandler(async () => {
      asked++;
      throw new Error("not reached");
    });
    await expect(hub.call("s.ask_model", { question: "2 + 2?" })).rejects.toThrow(
      /sampling is denied for server "s" in the hub config/,
    );
    expect(asked).toBe(0);
  });

  it.runIf(session)(
    "roots: the server lists the hub's roots, follows a change, and its own config's roots win",
    async () => {
      const a = join(dir, "a");
      const b = join(dir, "b");
      const { hub } = await start({}, [a]);
      expect(await hub.call("s.roots", {})).toEqual([pathToFileURL(a).href]);
      hub.setRoots([b]);
      // A 2025 server is told the list changed; a modern one asks again with each call.
      expect(await hub.call("s.roots", {})).toEqual([pathToFileURL(b).href]);
      await hub.close();
      const own = await start({ roots: [b] }, [a]);
      expect(await own.hub.call("s.roots", {})).toEqual([pathToFileURL(b).href]);
    },
  );
});

describe("the hub with an SDK v1 server keeping a 2025 session over HTTP", () => {
  it("cancellation, a form answered by the human channel, and a tool list change", async () => {
    hub = await MultiMCP.start({
      servers: [{ id: "f", url: await httpServer(FAULT_SERVER), timeout_ms: 30_000 }],
    });
    expect(hub.status()[0]).toMatchObject({ state: "ready", era: "legacy" });
    const h = hub;
    const stats = async () => (await h.call("f.stats", {})) as { calls: number; cancellations: number };

    const step = new AbortController();
    const hanging = failure(h.call("f.hang", {}, { signal: step.signal }));
    await eventually(async () => (await stats()).calls > 0, "the server to run the call");
    step.abort(new Error("the step ended"));
    expect((await hanging).code).toBe("TOOL_CANCELLED");
    await eventually(async () => (await stats()).cancellations === 1, "the server to see the cancellation");

    const human = new ScriptedChannel({
      elicitation: [{ action: "accept", content: { name: "Ada" }, expect: "What is your name?" }],
    });
    h.setElicitationHandler(async (server, request) =>
      toElicitResult(
        await human.ask({
          kind: "elicitation",
          server,
          message: request.message,
          requestedSchema:
            "requestedSchema" in request ? request.requestedSchema : { type: "object", properties: {} },
        }),
      ),
    );
    expect(await h.call("f.ask", { message: "What is your name?" })).toEqual({
      action: "accept",
      content: { name: "Ada" },
    });

    expect(await h.call("f.grow", {})).toBe("grew");
    await until(() => h.tools().some((t) => t.qualified === "f.grown"), "the new tool to be listed");
    expect(await h.call("f.grown", {})).toBe("grown");
  });
});
