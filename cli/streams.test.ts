/**
 * The trace on stderr and the answer alone on stdout, through the real CLI: `pda run … > answer.txt` holds
 * exactly the answer (stdout a real file, as the shell makes it), `| jq` gets exactly the JSON summary, and a
 * failed session leaves stdout empty.
 */
import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { DEFAULT_CONFIG_DIR, distPath } from "../core/index.js";
import { cliFolder, snap, type CliFolder } from "./harness.js";

const DEMO = `scripted:${join(DEFAULT_CONFIG_DIR, "demo", "calculator.yaml")}`;
const QUERY = "What is 32 + 5 - 3 * 2";
const ANSWER = "32 + 5 - 3 * 2 = 31";

let cli: CliFolder;
beforeAll(() => {
  cli = cliFolder("pda-streams-");
});
afterAll(() => cli.close());

/** `pda <args> > file`: stdout is the file itself (not a pipe), stderr is read; resolves with the exit code. */
function runToFile(args: string[], file: string): Promise<{ code: number | null; stderr: string }> {
  const fd = openSync(file, "w");
  const child = spawn(
    process.execPath,
    [distPath("main.js"), "--config", cli.config, "--db", join(cli.dir, "pda.db"), ...args],
    { env: { PATH: process.env.PATH ?? "", HOME: cli.dir, NO_COLOR: "1" }, stdio: ["ignore", fd, "pipe"] },
  );
  closeSync(fd);
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stderr })));
}

describe("stdout holds the answer alone, stderr the trace", () => {
  it("`pda run … > answer.txt`: the file is exactly the answer; the trace and figures are on stderr", async () => {
    const file = join(cli.dir, "answer.txt");
    const r = await runToFile(["run", QUERY, "--model", DEMO], file);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(file, "utf8")).toBe(`${ANSWER}\n`);
    expect(r.stderr).toMatch(/^perception /m);
    expect(r.stderr).toMatch(/^plan v1 /m);
    expect(r.stderr).toMatch(/^step 0 CODE /m);
    expect(r.stderr).toMatch(/→ math\.multiply ok/);
    expect(r.stderr).toMatch(/^answer$/m);
    expect(r.stderr).toMatch(/\d+ steps · \d+ plan versions · \d+ model calls/);
  }, 60_000);

  it("through a pipe too: stdout is the answer, stderr the trace", async () => {
    const r = await cli.pda(["run", QUERY, "--model", DEMO]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${ANSWER}\n`);
    expect(r.stderr).toMatch(/^plan v1 /m);
  }, 60_000);

  it("`--json`: stdout is the summary alone, parseable as a whole", async () => {
    const r = await cli.pda(["run", QUERY, "--model", DEMO, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: "succeeded", final_answer: ANSWER });
    expect(r.stderr).not.toMatch(/plan v1/);
  }, 60_000);

  it("a session that fails: stdout stays empty, the status and reason are on stderr", async () => {
    // The same step fails three times (an unknown tool), then the policy is asked and fails the session.
    const failing = {
      plan_text: ["Step 0: compute"],
      step_index: 0,
      description: "compute",
      type: "CODE",
      code: "return await no_such_tool({});",
    };
    const script = join(cli.dir, "failing.yaml");
    writeFileSync(
      script,
      stringify({
        perception: [snap(false), snap(false), snap(false), snap(false)],
        decision: [failing, failing, failing],
      }),
    );
    const file = join(cli.dir, "failed.txt");
    const r = await runToFile(["run", QUERY, "--model", `scripted:${script}`, "--hil", "policy:fail"], file);
    expect(r.code, r.stderr).toBe(1);
    expect(readFileSync(file, "utf8")).toBe("");
    expect(r.stderr).toMatch(/^step 2 CODE compute/m);
    expect(r.stderr).toMatch(/^failed /m);
  }, 60_000);
});
