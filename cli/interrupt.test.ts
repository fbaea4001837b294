/**
 * Ctrl-C reaches a CODE step that spins (issue #24): the step runs in its engine's thread, so pda's own thread
 * takes the SIGINT at once, cancels the step and ends the session `aborted` (exit 1, "did not reach its
 * goal"), long before the step's timeout_ms of ten minutes.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { distPath } from "../core/index.js";
import { cliFolder, snap, type CliFolder } from "./harness.js";

let cli: CliFolder;
beforeEach(() => {
  cli = cliFolder("pda-interrupt-");
});
afterEach(() => cli.close());

async function until(what: string, check: () => boolean, withinMs = 40_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("Ctrl-C during a CODE step", () => {
  it("cancels a step that spins without awaiting, and the session ends aborted", async () => {
    writeFileSync(
      join(cli.config, "profiles.yaml"),
      stringify({ default: "default", profiles: { default: { sandbox: { timeout_ms: 600_000 } } } }),
    );
    const model = join(cli.dir, "spin.yaml");
    writeFileSync(
      model,
      stringify({
        perception: [snap(false), snap(false)],
        decision: [
          {
            plan_text: ["Step 0: compute", "Step 1: answer"],
            step_index: 0,
            description: "compute",
            type: "CODE",
            code: "console.log('spinning');\nwhile (true) {}",
          },
        ],
      }),
    );
    const pda = spawn(
      process.execPath,
      [
        distPath("main.js"),
        "--config",
        cli.config,
        "--db",
        join(cli.dir, "pda.db"),
        "run",
        "What is 2 + 3",
        "--model",
        `scripted:${model}`,
        "--hil",
        "policy:fail",
      ],
      {
        env: { PATH: process.env.PATH ?? "", HOME: cli.dir, NO_COLOR: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let trace = "";
    pda.stderr.on("data", (d: Buffer) => (trace += d.toString()));
    let exit: number | null | undefined;
    pda.on("exit", (code) => (exit = code));
    try {
      // The step's first line is out: from here on its code spins.
      await until("the step did not start", () => trace.includes("console: spinning"));
      pda.kill("SIGINT");
      await until("pda did not end after Ctrl-C", () => exit !== undefined);
    } finally {
      pda.kill("SIGKILL");
    }
    expect(exit).toBe(1);
    expect(trace).toMatch(/^aborted cancelled: cancelled by Ctrl-C/m);
  });
});
