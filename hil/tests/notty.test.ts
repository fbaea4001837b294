/**
 * Unattended runs: with stdin a pipe nobody writes to (a batch job, CI), the channel must answer by policy
 * and return, never block on a read. Spawns `node dist/hil/demo.js`; build first.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../core/index.js";

const DEMO = join(PACKAGE_ROOT, "dist", "hil", "demo.js");
const dir = mkdtempSync(join(tmpdir(), "pda-hil-notty-"));

beforeAll(() => {
  if (!existsSync(DEMO)) throw new Error(`${DEMO} is missing: build first (npx tsc -p tsconfig.json)`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Run {
  code: number | null;
  /** True when the guard had to kill it: the child blocked. */
  killed: boolean;
  stdout: string;
  stderr: string;
}

/** Run the demo with stdin an open pipe that never gets data; kill it after `guardMs` if it blocks. */
function runDemo(args: string[], guardMs = 20_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [DEMO, ...args], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, NO_COLOR: "1" },
    });
    let stdout = "";
    let stderr = "";
    let killed = false;
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const guard = setTimeout(() => {
      killed = true;
      child.kill("SIGKILL");
    }, guardMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(guard);
      child.stdin.destroy();
      resolve({ code, killed, stdout, stderr });
    });
  });
}

const answerLines = (out: string) =>
  out
    .split("\n")
    .filter((l) => l.startsWith("ANSWER "))
    .map((l) => JSON.parse(l.slice(7)));

describe("no TTY", () => {
  it("without --hil, every question is answered by policy:fail and the process returns on its own", async () => {
    const r = await runDemo(["tool_failure", "clarification", "approval", "elicitation"]);
    expect(r.killed).toBe(false);
    expect(r.code).toBe(0);
    expect(answerLines(r.stdout)).toMatchObject([
      { kind: "stop", question_kind: "tool_failure", outcome: "fail", answered_by: "policy:fail" },
      { kind: "stop", question_kind: "clarification", outcome: "fail", answered_by: "policy:fail" },
      { kind: "stop", question_kind: "approval", outcome: "fail", answered_by: "policy:fail" },
      { kind: "elicitation", action: "cancel", answered_by: "policy:fail" },
    ]);
  });

  it("--hil terminal without a TTY is a configuration error (exit 2) that says why", async () => {
    const r = await runDemo(["--hil", "terminal", "clarification"]);
    expect(r.killed).toBe(false);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--hil terminal needs a terminal, but stdin/stdout is not a TTY");
    expect(r.stdout).toBe("");
  });

  it("scripted answers work unattended, and report what was left unused", async () => {
    const file = join(dir, "answers.yaml");
    writeFileSync(file, "tool_failure: [{choice: give_result, value: 31}]\napproval: [allow_once, deny]\n");
    const r = await runDemo(["--hil", `scripted:${file}`, "tool_failure", "approval"]);
    expect(r.code).toBe(0);
    expect(answerLines(r.stdout)).toMatchObject([
      { kind: "tool_failure", choice: "give_result", value: 31, answered_by: "scripted" },
      { kind: "approval", choice: "allow_once", answered_by: "scripted" },
    ]);
    expect(r.stdout).toContain('UNCONSUMED [{"kind":"approval","index":1,"entry":{"choice":"deny"}}]');
  });

  it("a question the script has no answer for fails loudly instead of waiting", async () => {
    const file = join(dir, "empty.yaml");
    writeFileSync(file, "approval: []\n");
    const r = await runDemo(["--hil", `scripted:${file}`, "approval"]);
    expect(r.killed).toBe(false);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("HIL_SCRIPT_EXHAUSTED");
    expect(r.stderr).toContain("no scripted approval answer left (0 given)");
  });
});
