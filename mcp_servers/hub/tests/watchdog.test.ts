/**
 * `kill -9` of pda leaves no stdio server behind (issue #24): pda runs a call on a server that ignores
 * stdin EOF and SIGTERM and has a grandchild that does too; pda is SIGKILLed, and the watchdog ends both —
 * also a grandchild that left the process tree, which only the server's own process group still holds (pda
 * here runs without a terminal, as in batch and CI).
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../../core/index.js";
import { signalAll } from "../proctree.js";
import { HOSTILE_SERVER, alive, gone } from "./helpers.js";

const dir = mkdtempSync(join(tmpdir(), "pda-watchdog-"));
const leftovers: number[] = [];
afterAll(() => {
  signalAll(leftovers, "SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

async function until<T>(what: string, check: () => T | undefined, withinMs = 20_000): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("the watchdog", () => {
  async function killedWhileCalling(flags: string[]): Promise<void> {
    const pidFile = join(dir, `pids${flags.join("")}`);
    const config = join(dir, `hub${flags.join("")}.yaml`);
    writeFileSync(
      config,
      [
        "servers:",
        "  - id: stubborn",
        `    command: ${JSON.stringify(process.execPath)}`,
        `    args: ${JSON.stringify([HOSTILE_SERVER, "--ignore-eof", ...flags])}`,
        `    env: { HOSTILE_PID_FILE: ${JSON.stringify(pidFile)} }`,
      ].join("\n"),
    );
    const pda = spawn(
      process.execPath,
      [
        join(PACKAGE_ROOT, "dist/main.js"),
        "--config",
        config,
        "call",
        "stubborn.hang",
        "--timeout",
        "600000",
      ],
      { stdio: "ignore" },
    );
    const [server, grandchild] = await until("the server was not called", () =>
      existsSync(pidFile) ? readFileSync(pidFile, "utf8").split(" ").map(Number) : undefined,
    );
    leftovers.push(server!, grandchild!);
    expect([alive(server), alive(grandchild)]).toEqual([true, true]);
    pda.kill("SIGKILL");
    expect(await gone([server, grandchild], 20_000)).toEqual([]);
  }

  it("ends a server that ignores stdin EOF and SIGTERM, and its grandchild, after pda is SIGKILLed", async () => {
    await killedWhileCalling([]);
  });

  it("ends a grandchild that left the server's process tree (its parent exited), by the server's process group", async () => {
    await killedWhileCalling(["--orphan"]);
  });
});
