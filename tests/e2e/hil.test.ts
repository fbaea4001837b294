/**
 * The human in the loop through the real CLI: a real terminal in tmux, a session deferred in one process and
 * resumed in another, and an unattended run (no TTY) that never blocks.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../core/index.js";
import { withTmux } from "../../hil/tests/tmux.js";
import { achieved, code, snap } from "../../agent/tests/harness.js";

const MAIN = join(PACKAGE_ROOT, "dist", "main.js");
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-e2e-hil-"));
  // A config folder whose profile gives each step one attempt, so the first failure goes to the human.
  writeFileSync(
    join(dir, "mcp_server_config.yaml"),
    stringify({
      servers: [
        {
          id: "math",
          command: process.execPath,
          args: [join(PACKAGE_ROOT, "dist/mcp_servers/math/server.js")],
        },
      ],
    }),
  );
  writeFileSync(
    join(dir, "profiles.yaml"),
    stringify({ default: "t", profiles: { t: { budgets: { max_attempts_per_step: 1 } } } }),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, data: unknown): string {
  const p = join(dir, name);
  writeFileSync(p, stringify(data));
  return p;
}

const PLAN = ["Step 0: compute", "Step 1: answer"];
const failing = () =>
  file("fail.yaml", {
    perception: [snap(), snap({ local_reasoning: "division by zero" }), achieved("31")],
    decision: [code(PLAN, 0, "return await divide(31, 0)")],
  });

function pda(args: string[]): Promise<{ code: number; stdout: string; stderr: string; ms: number }> {
  const t = Date.now();
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [MAIN, "--config", dir, ...args],
      { env: { ...process.env, NO_COLOR: "1" }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({
          code: err ? ((err as { code?: number }).code ?? 1) : 0,
          stdout,
          stderr,
          ms: Date.now() - t,
        }),
    );
    child.stdin?.end(); // stdin is a pipe, not a TTY
  });
}

describe("human in the loop, end to end", () => {
  it("in a real terminal: a tool fails, the person gives the result, the session finishes with it", async () => {
    const db = join(dir, "term.db");
    await withTmux(
      [
        "node",
        MAIN,
        "--config",
        dir,
        "--db",
        db,
        "run",
        "What is 32 + 5 - 3 * 2",
        "--model",
        `scripted:${failing()}`,
        "--hil",
        "terminal",
      ],
      { cols: 110, rows: 50, cwd: PACKAGE_ROOT },
      async (t) => {
        const screen = await t.waitFor("What should the agent do?", { timeoutMs: 30_000 });
        expect(screen).toContain("return await divide(31, 0)");
        expect(screen).toMatch(/TOOL_ERROR/);
        await t.sendKeys("Down", "Down");
        await t.waitFor("Type the value this step should have returned");
        await t.sendKeys("Enter");
        await t.waitFor("The step's result (JSON or text):");
        await t.type("31");
        await t.sendKeys("Enter");
        expect(await t.waitForExit({ timeoutMs: 30_000 })).toBe(0);
        expect(await t.output()).toMatch(/answer 31/);
      },
    );
  });

  it("in a real terminal: a NOP question is answered in free text and the plan goes on", async () => {
    const script = file("nop.yaml", {
      perception: [snap(), achieved("-1.11 °C")],
      decision: [
        {
          plan_text: ["Step 0: ask the unit", "Step 1: convert"],
          step_index: 0,
          description: "ask",
          type: "NOP",
          question: "Celsius or Kelvin?",
        },
        code(["Step 0: ask the unit", "Step 1: convert"], 1, "return await divide((30 - 32) * 5, 9)"),
      ],
    });
    await withTmux(
      [
        "node",
        MAIN,
        "--config",
        dir,
        "--db",
        join(dir, "nop.db"),
        "run",
        "convert 30 F",
        "--model",
        `scripted:${script}`,
        "--hil",
        "terminal",
      ],
      { cols: 110, rows: 50, cwd: PACKAGE_ROOT },
      async (t) => {
        await t.waitFor("Celsius or Kelvin?", { timeoutMs: 30_000 });
        await t.type("Celsius");
        await t.sendKeys("Enter");
        expect(await t.waitForExit({ timeoutMs: 30_000 })).toBe(0);
        expect(await t.output()).toMatch(/answer -1\.11 °C/);
      },
    );
  });

  it("at a terminal with stdout in a file and no --hil: the question is asked at the terminal, the JSON goes to the file", async () => {
    const script = file("secret.yaml", {
      perception: [snap(), achieved("1042")],
      decision: [
        {
          plan_text: ["Step 0: ask the number", "Step 1: add"],
          step_index: 0,
          description: "ask",
          type: "NOP",
          question: "What is your secret number?",
        },
        code(["Step 0: ask the number", "Step 1: add"], 1, "return await add(42, 1000)"),
      ],
    });
    const out = join(dir, "secret.json");
    const db = join(dir, "secret.db");
    const argv = [MAIN, "--config", dir, "--db", db, "run", "Add 1000 to my secret number"];
    const quoted = [...argv, "--model", `scripted:${script}`, "--json"].map((a) => `'${a}'`).join(" ");
    await withTmux(
      ["sh", "-c", `'${process.execPath}' ${quoted} > '${out}'`],
      { cols: 110, rows: 50, cwd: PACKAGE_ROOT },
      async (t) => {
        await t.waitFor("What is your secret number?", { timeoutMs: 30_000 });
        await t.type("42");
        await t.sendKeys("Enter");
        expect(await t.waitForExit({ timeoutMs: 30_000 })).toBe(0);
        expect(await t.output()).not.toContain("session_id");
      },
    );
    expect(JSON.parse(readFileSync(out, "utf8"))).toMatchObject({
      status: "succeeded",
      final_answer: "1042",
      human_inputs: 1,
    });
  });

  it("a session deferred in one process is resumed in another and continues the same step", async () => {
    const db = join(dir, "defer.db");
    const first = await pda([
      "--db",
      db,
      "run",
      "What is 32 + 5 - 3 * 2",
      "--model",
      `scripted:${failing()}`,
      "--hil",
      "policy:defer",
      "--json",
    ]);
    expect(first.code).toBe(1);
    const paused = JSON.parse(first.stdout);
    expect(paused).toMatchObject({ status: "awaiting_human", steps: 1 });
    expect(paused.question).toMatch(/divide|zero/i);

    // No terminal and no --hil: nobody to ask, so the session stays paused (not failed by policy:fail) and
    // the person is told how to answer; exit 4, not 1.
    for (const attempt of [1, 2]) {
      const unattended = await pda(["--db", db, "resume", paused.session_id, "--json"]);
      expect(unattended.code, `attempt ${attempt}: ${unattended.stderr}`).toBe(4);
      expect(JSON.parse(unattended.stdout)).toMatchObject({
        session_id: paused.session_id,
        status: "awaiting_human",
        question: paused.question,
      });
      expect(unattended.stderr).toMatch(/still waits on a human and stays paused/);
      expect(unattended.stderr).toMatch(/--hil scripted:FILE/);
      expect(unattended.stderr).toMatch(/--hil policy:/);
      const shown = await pda(["--db", db, "show", paused.session_id, "--json"]);
      expect(JSON.parse(shown.stdout)).toMatchObject({ status: "awaiting_human" });
    }

    const resumeModel = file("resume.yaml", { perception: [achieved("31")] });
    const answers = file("answers.yaml", { tool_failure: [{ choice: "give_result", value: 31 }] });
    const second = await pda([
      "--db",
      db,
      "resume",
      paused.session_id.slice(0, 8),
      "--model",
      `scripted:${resumeModel}`,
      "--hil",
      `scripted:${answers}`,
      "--json",
    ]);
    expect(second.stderr).toBe("");
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({
      session_id: paused.session_id,
      status: "succeeded",
      final_answer: "31",
      steps: 1,
      human_inputs: 2,
    });
  });

  it("without a terminal and without --hil, a question is answered by policy:fail at once, never a blocked read", async () => {
    const script = file("q.yaml", {
      perception: [snap()],
      decision: [
        {
          plan_text: ["Step 0: ask"],
          step_index: 0,
          description: "ask",
          type: "NOP",
          question: "Which file?",
        },
      ],
    });
    const r = await pda([
      "--db",
      join(dir, "notty.db"),
      "run",
      "summarise the file",
      "--model",
      `scripted:${script}`,
      "--json",
    ]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: "failed", human_inputs: 1 });
  });
});
