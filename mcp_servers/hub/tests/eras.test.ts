/**
 * Both MCP eras through one hub: a server written with SDK v2 (mcp_servers/testing/modern_server) over stdio
 * and Streamable HTTP speaks 2026-07-28, beside SDK v1 servers (the 2025 era) over stdio and HTTP. Calls,
 * elicitation (the modern era's input_required reaches the same handler as a 2025 elicitation/create), a tool
 * list change (subscriptions/listen in the modern era), and the era kept in the tool-list cache.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import type { CachedToolList, ToolListCache } from "../../../core/index.js";
import { MultiMCP, type HubEvent } from "../../index.js";
import { FAULT_SERVER, MODERN_SERVER, gone, listeningUrl, until } from "./helpers.js";

const children: ChildProcess[] = [];
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  expect(await gone(children.map((c) => c.pid))).toEqual([]);
});

async function startHttp(script: string, name: string): Promise<string> {
  const child = spawn(process.execPath, [script, "--http", "127.0.0.1:0"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  return listeningUrl(child, name);
}

function memoryCache(): ToolListCache & { entries: Map<string, CachedToolList> } {
  const entries = new Map<string, CachedToolList>();
  return {
    entries,
    get: (key) => entries.get(key),
    put: (key, _server, list) => void entries.set(key, list),
  };
}

describe("both eras through one hub", () => {
  it("modern and legacy servers over stdio and HTTP: calls, elicitation, list changes, the era each speaks", async () => {
    const [modernUrl, legacyUrl] = await Promise.all([
      startHttp(MODERN_SERVER, "modern"),
      startHttp(FAULT_SERVER, "fault"), // SDK v1 over HTTP (the bundled servers serve both eras now)
    ]);
    const events: HubEvent[] = [];
    const hub = await MultiMCP.start(
      {
        servers: [
          { id: "modern", command: process.execPath, args: [MODERN_SERVER], protocol: "2026-07-28" },
          { id: "modern_auto", command: process.execPath, args: [MODERN_SERVER], protocol: "auto" },
          { id: "modern_http", url: modernUrl },
          { id: "legacy", command: process.execPath, args: [FAULT_SERVER] },
          { id: "legacy_auto", command: process.execPath, args: [FAULT_SERVER], protocol: "auto" },
          { id: "legacy_http", url: legacyUrl },
        ],
      },
      { onEvent: (e) => events.push(e) },
    );
    try {
      const byId = Object.fromEntries(hub.status().map((s) => [s.id, s]));
      for (const id of ["modern", "modern_auto", "modern_http"])
        expect(byId[id], id).toMatchObject({ state: "ready", era: "modern", protocolVersion: "2026-07-28" });
      for (const id of ["legacy", "legacy_auto", "legacy_http"])
        expect(byId[id], id).toMatchObject({ state: "ready", era: "legacy" });

      expect(await hub.call("modern.echo", { text: "hi" })).toBe("hi");
      expect(await hub.call("modern_http.echo", { text: "there" })).toBe("there");
      expect(await hub.call("legacy.echo", { text: "old" })).toBe("old");
      expect(await hub.call("legacy_http.pid", {})).toBeGreaterThan(0);

      const asked: string[] = [];
      hub.setElicitationHandler(async (server, request) => {
        asked.push(`${server}: ${request.message}`);
        return { action: "accept", content: { ok: true, note: server } };
      });
      for (const id of ["modern", "modern_http"]) {
        expect(await hub.call(`${id}.confirm`, { action: "deploy" })).toEqual({
          action: "deploy",
          confirmed: true,
          note: id,
        });
      }
      expect(asked).toEqual(["modern: Go ahead with deploy?", "modern_http: Go ahead with deploy?"]);
      expect(events.filter((e) => e.type === "elicitation").map((e) => e.server)).toEqual([
        "modern",
        "modern_http",
      ]);

      // A tool list change over the modern era's subscriptions/listen stream, on stdio and on HTTP.
      for (const id of ["modern", "modern_http"]) {
        expect(await hub.call(`${id}.grow`, {})).toBe("grown");
        await until(
          () => hub.tools().some((t) => t.qualified === `${id}.extra`),
          `${id}'s new tool to be listed`,
        );
        expect(await hub.call(`${id}.extra`, {})).toBe("extra here");
      }
    } finally {
      await hub.close();
    }
  });

  it("keeps each server's era with its cached tools and reconnects in that era (`auto` given the verdict)", async () => {
    const cache = memoryCache();
    const config = {
      servers: [
        { id: "modern", command: process.execPath, args: [MODERN_SERVER], protocol: "auto" as const },
        { id: "legacy", command: process.execPath, args: [FAULT_SERVER], protocol: "auto" as const },
      ],
    };
    const first = await MultiMCP.start(config, { cache });
    await first.close();
    const cached = [...cache.entries.values()];
    expect(cached.map((c) => c.era).sort()).toEqual(["legacy", "modern"]);
    expect(cached.find((c) => c.era === "modern")!.discover).toMatchObject({
      supportedVersions: expect.arrayContaining(["2026-07-28"]),
    });

    const second = await MultiMCP.start(config, { cache });
    try {
      expect(second.status().map((s) => [s.id, s.state, s.era])).toEqual([
        ["modern", "cached", "modern"],
        ["legacy", "cached", "legacy"],
      ]);
      expect(await second.call("modern.echo", { text: "again" })).toBe("again");
      expect(await second.call("legacy.echo", { text: "again" })).toBe("again");
      expect(second.status().map((s) => [s.id, s.state, s.era])).toEqual([
        ["modern", "ready", "modern"],
        ["legacy", "ready", "legacy"],
      ]);
    } finally {
      await second.close();
    }
  });
});
