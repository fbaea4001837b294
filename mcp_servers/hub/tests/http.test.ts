/**
 * The hub over Streamable HTTP against our math server listening on 127.0.0.1: list, call, a server that
 * goes away (typed error, no replay), and a reconnect once it is back on the same port.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { MultiMCP } from "../../index.js";
import { MATH_SERVER, gone, failure, listeningUrl } from "./helpers.js";

const children: ChildProcess[] = [];
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  expect(await gone(children.map((c) => c.pid))).toEqual([]);
});

/** Start the math server over HTTP and resolve with its URL (read from its stdout, bounded wait). */
async function startHttpMath(port = 0): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [MATH_SERVER, "--http", `127.0.0.1:${port}`], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  const url = await listeningUrl(child, "math");
  return { child, url };
}

describe("Streamable HTTP", () => {
  it("lists and calls tools, survives the server going away, reconnects when it is back", async () => {
    const first = await startHttpMath();
    const port = Number(new URL(first.url).port);
    const now = 0;
    const clock = { now: () => now, iso: () => new Date(now).toISOString(), sleep: async () => {} };
    const hub = await MultiMCP.start(
      { servers: [{ id: "calc", url: first.url, headers: { "x-test": "1" }, timeout_ms: 5000 }] },
      { clock },
    );
    try {
      expect(hub.status()[0]).toMatchObject({ id: "calc", transport: "http", state: "ready", tools: 15 });
      expect(await hub.call("calc.multiply", { a: 6, b: 7 })).toBe(42);
      const e = await failure(hub.call("divide", { a: 1, b: 0 }));
      expect(e.code).toBe("TOOL_ERROR");

      first.child.kill("SIGKILL");
      await gone([first.child.pid]);
      const down = await failure(hub.call("add", { a: 1, b: 1 }));
      expect(down.code).toBe("SERVER_UNAVAILABLE");
      expect(hub.status()[0]!.state).toBe("crashed");

      await startHttpMath(port);
      expect(await hub.call("add", { a: 1, b: 1 })).toBe(2);
      expect(hub.status()[0]).toMatchObject({ state: "ready", restarts: 1 });
    } finally {
      await hub.close();
    }
  });

  it("an unreachable URL is reported at start, and the hub still starts", async () => {
    const hub = await MultiMCP.start({
      servers: [{ id: "nowhere", url: "http://127.0.0.1:9/mcp", connect_timeout_ms: 3000 }],
    });
    try {
      expect(hub.status()[0]).toMatchObject({ state: "failed" });
      expect(hub.status()[0]!.lastError).toMatch(/could not start/);
      const e = await failure(hub.call("nowhere.anything", {}));
      expect(e.code).toBe("SERVER_UNAVAILABLE");
    } finally {
      await hub.close();
    }
  });
});
