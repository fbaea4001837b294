/**
 * Through the real CLI: chat answers an unknown /command itself instead of sending it to the model, and
 * `pda run … | head` (stdout closed mid-session) ends the session with its own status, not left running.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG_DIR, distPath } from "../core/index.js";
import { cliFolder, type CliFolder } from "./harness.js";

const DEMO = `scripted:${join(DEFAULT_CONFIG_DIR, "demo", "calculator.yaml")}`;

let cli: CliFolder;
beforeEach(() => {
  cli = cliFolder("pda-chat-pipe-");
});
afterEach(() => cli.close());

/** `pda <args>` with `input` on stdin; `closeStdout` closes the reading end of its stdout at once. */
function pda(args: string[], input: string, closeStdout = false) {
  const child = spawn(
    process.execPath,
    [distPath("main.js"), "--config", cli.config, "--db", join(cli.dir, "pda.db"), ...args],
    { env: { PATH: process.env.PATH ?? "", HOME: cli.dir, NO_COLOR: "1" } },
  );
  let stdout = "";
  let stderr = "";
  if (closeStdout) child.stdout.destroy();
  else child.stdout.on("data", (d: Buffer) => (stdout += String(d)));
  child.stderr.on("data", (d: Buffer) => (stderr += String(d)));
  child.stdin.end(input);
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr })),
  );
}

async function sessions(): Promise<Array<{ status: string; status_reason?: string }>> {
  const r = await cli.pda(["sessions", "--json"]);
  return JSON.parse(r.stdout) as Array<{ status: string }>;
}

describe("chat and pipes", () => {
  it("chat: an unknown /command is answered 'unknown command, try /help', not sent to the model", async () => {
    const r = await pda(["chat", "--model", DEMO], "/tolls\n/exit\n");
    expect(r.stderr).toMatch(/unknown command \/tolls, try \/help/);
    expect(r.code).toBe(0);
    expect(await sessions()).toEqual([]);
  });

  it("run with stdout closed: the session is cancelled cleanly with its own status, quietly", async () => {
    const r = await pda(["run", "What is 32 + 5 - 3 * 2", "--model", DEMO], "", true);
    expect(r.stderr).not.toMatch(/^\s+at |EPIPE/m);
    const [s] = await sessions();
    // Cancelled when its first line could not be written (or, on a fast run, finished before that was noticed).
    expect(["aborted", "succeeded"]).toContain(s?.status);
    if (s?.status === "aborted") expect(s.status_reason).toMatch(/stdout was closed/);
  });
});
