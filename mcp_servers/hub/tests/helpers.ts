/** Shared bits of the hub tests: paths of compiled servers, the ToolError a call fails with, and a check that processes are gone. */
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { createRequire } from "node:module";
import { expect } from "vitest";
import { PACKAGE_ROOT, ToolError } from "../../../core/index.js";

export const MATH_SERVER = join(PACKAGE_ROOT, "dist/mcp_servers/math/server.js");
export const FAULT_SERVER = join(PACKAGE_ROOT, "dist/mcp_servers/testing/fault_server.js");
export const DOCUMENTS_SERVER = join(PACKAGE_ROOT, "dist/mcp_servers/documents/server.js");
export const HOSTILE_SERVER = join(PACKAGE_ROOT, "dist/mcp_servers/testing/hostile_server.js");
export const SAMPLING_SERVER = join(PACKAGE_ROOT, "dist/mcp_servers/testing/sampling_server.js");
export const SSE_SERVER = join(PACKAGE_ROOT, "dist/mcp_servers/testing/sse_server.js");
export const WEB_SERVER = join(PACKAGE_ROOT, "dist/mcp_servers/web/server.js");
export const MODERN_SERVER = join(PACKAGE_ROOT, "dist/mcp_servers/testing/modern_server.js");

/** A reference server's bin script, resolved from node_modules (never npx, never the network). */
export function referenceServerBin(pkg: string): string {
  const require = createRequire(join(PACKAGE_ROOT, "package.json"));
  const manifest = require(`${pkg}/package.json`) as { bin: string | Record<string, string> };
  const bin = typeof manifest.bin === "string" ? manifest.bin : Object.values(manifest.bin)[0]!;
  return join(PACKAGE_ROOT, "node_modules", pkg, bin);
}

export function alive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits (bounded, generous for a busy machine) until none of the pids runs; returns those still alive. */
export async function gone(pids: (number | undefined)[], withinMs = 30_000): Promise<number[]> {
  const deadline = Date.now() + withinMs;
  let left = pids.filter(alive) as number[];
  while (left.length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    left = left.filter(alive);
  }
  return left;
}

/** Polls `condition` until it holds; fails naming `what` after `withinMs` (generous: the machine may be busy). */
export async function until(condition: () => boolean, what: string, withinMs = 30_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The ToolError `p` rejects with (the test fails if it resolves or rejects with anything else). */
export async function failure(p: Promise<unknown>): Promise<ToolError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ToolError);
  return e as ToolError;
}

/**
 * The URL a bundled server started with `--http` prints ("listening <url>"). The wait is long because a busy
 * machine can take many seconds to start node; an exit before that fails at once.
 */
export function listeningUrl(child: ChildProcess, name: string, withinMs = 60_000): Promise<string> {
  const lines = createInterface({ input: child.stdout! });
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} --http did not print its URL within ${withinMs} ms`)),
      withinMs,
    );
    lines.on("line", (line) => {
      const m = /^listening (\S+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} --http exited with ${code}`));
    });
  });
}
