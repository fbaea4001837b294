/**
 * DNS-rebinding protection over real HTTP: each bundled server started with `--http` refuses a foreign Host or
 * Origin before doing anything, answers loopback ones, and answers a host allowed by --allow-host or
 * PDA_MCP_ALLOWED_HOSTS.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { request } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../core/index.js";
import { DOCUMENTS_SERVER, MATH_SERVER, WEB_SERVER, gone } from "../hub/tests/helpers.js";
import { HostGuard } from "./rebinding.js";

const ROBOT_SERVER = join(PACKAGE_ROOT, "dist/mcp_servers/robot/server.js");
const tmp = mkdtempSync(join(tmpdir(), "pda-rebinding-"));
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  expect(await gone(children.map((c) => c.pid))).toEqual([]);
  rmSync(tmp, { recursive: true, force: true });
});

async function start(script: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<number> {
  const child = spawn(process.execPath, [script, "--http", "127.0.0.1:0", ...args], {
    stdio: ["ignore", "pipe", "ignore"],
    env: { ...process.env, ...env },
  });
  children.push(child);
  const lines = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not print its URL within 30 s`)), 30_000);
    lines.on("line", (line) => {
      const m = /^listening (\S+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once("exit", (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return Number(new URL(url).port);
}

const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
});

/** A raw request to 127.0.0.1:port with the given headers (fetch cannot set Host). */
function send(
  port: number,
  headers: Record<string, string>,
  method = "POST",
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path: "/mcp",
        method,
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...headers,
        },
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end(method === "POST" ? INITIALIZE : undefined);
  });
}

describe("DNS-rebinding protection (--http)", () => {
  const servers: [string, string, string[]][] = [
    ["math", MATH_SERVER, []],
    ["documents", DOCUMENTS_SERVER, ["--db", join(tmp, "docs.db")]],
    ["web", WEB_SERVER, []],
    ["robot", ROBOT_SERVER, []],
  ];
  it.each(servers)(
    "%s refuses a foreign Host or Origin and answers loopback ones",
    async (_, script, args) => {
      const port = await start(script, args);
      const evil = await send(port, { host: `evil.example.com:${port}` });
      expect(evil.status).toBe(403);
      expect(evil.body).toMatch(/Host evil\.example\.com:\d+ is not allowed \(DNS-rebinding protection\)/);
      expect((await send(port, { host: `evil.example.com:${port}` }, "GET")).status).toBe(403);
      const origin = await send(port, { host: `127.0.0.1:${port}`, origin: "http://evil.example.com" });
      expect(origin.status).toBe(403);
      expect(origin.body).toMatch(/Origin http:\/\/evil\.example\.com is not allowed/);

      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
        const ok = await send(port, { host, origin: `http://localhost:${port}` });
        expect(ok.status, host).toBe(200);
        expect(ok.body).toMatch(/"protocolVersion"/);
      }
    },
  );

  it("answers hosts allowed by --allow-host or PDA_MCP_ALLOWED_HOSTS, and only those", async () => {
    const byFlag = await start(MATH_SERVER, ["--allow-host", "mcp.internal,other.internal"]);
    expect((await send(byFlag, { host: `mcp.internal:${byFlag}` })).status).toBe(200);
    expect((await send(byFlag, { host: `other.internal:${byFlag}` })).status).toBe(200);
    expect((await send(byFlag, { host: `evil.example.com:${byFlag}` })).status).toBe(403);
    const byEnv = await start(MATH_SERVER, [], { PDA_MCP_ALLOWED_HOSTS: "mcp.internal" });
    expect((await send(byEnv, { host: "mcp.internal" })).status).toBe(200);
    expect((await send(byEnv, { host: "evil.example.com" })).status).toBe(403);
  });
});

describe("HostGuard", () => {
  it("allows loopback names and addresses in any form, and nothing else by default", () => {
    const guard = new HostGuard();
    for (const host of [
      "localhost",
      "LOCALHOST:80",
      "app.localhost:3000",
      "127.0.0.1",
      "127.9.8.7:1",
      "[::1]:8080",
    ]) {
      expect(guard.refusal({ host }), host).toBeUndefined();
    }
    for (const host of ["evil.example.com", "localhost.evil.example", "10.0.0.1", "[::2]", "0.0.0.0:80"]) {
      expect(guard.refusal({ host }), host).toMatch(/not allowed/);
    }
    expect(guard.refusal({})).toBe("missing Host header");
    expect(guard.refusal({ host: "a b" })).toMatch(/invalid Host header/);
    expect(guard.refusal({ host: "localhost", origin: "null" })).toMatch(/Origin null is not allowed/);
    expect(guard.refusal({ host: "localhost", origin: "file://localhost" })).toMatch(/not allowed/);
    expect(guard.refusal({ host: "localhost", origin: "https://[::1]:9" })).toBeUndefined();
  });

  it("takes extra hosts from argv, the environment and the listening address; * turns it off", () => {
    const guard = HostGuard.fromArgs(["--allow-host=a.example", "--allow-host", "b.example"], "10.1.2.3", {
      PDA_MCP_ALLOWED_HOSTS: "c.example, [fd00::1]",
    });
    for (const host of ["a.example", "b.example:1", "c.example", "[fd00::1]:8", "10.1.2.3:5"]) {
      expect(guard.refusal({ host }), host).toBeUndefined();
    }
    expect(guard.refusal({ host: "d.example" })).toMatch(/not allowed/);
    expect(HostGuard.fromArgs([], "0.0.0.0", {}).refusal({ host: "0.0.0.0" })).toMatch(/not allowed/);
    expect(new HostGuard(["*"]).refusal({ host: "anything.example", origin: "null" })).toBeUndefined();
  });
});
