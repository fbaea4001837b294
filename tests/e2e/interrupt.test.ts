/** Ctrl-C in a real terminal (tmux): the call in flight is cancelled and the person is asked what now. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { stringify } from "yaml";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../core/index.js";
import { achieved, code, snap } from "../../agent/tests/harness.js";
import { withTmux } from "../../hil/tests/tmux.js";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-e2e-interrupt-"));
  writeFileSync(
    join(dir, "mcp_server_config.yaml"),
    stringify({
      servers: [
        {
          id: "faulty",
          command: process.execPath,
          args: [join(PACKAGE_ROOT, "dist/mcp_servers/testing/fault_server.js")],
        },
      ],
    }),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function pdaRun(db: string, script: unknown): string[] {
  const model = join(dir, `m${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(model, stringify(script));
  return [
    "node",
    join(PACKAGE_ROOT, "dist/main.js"),
    "--config",
    dir,
    "--db",
    db,
    "run",
    "wait for it",
    "--model",
    `scripted:${model}`,
    "--hil",
    "terminal",
  ];
}

const SLOW = code(["Step 0: wait"], 0, "return await slow({ ms: 3000, steps: 30 })");

it("go on: the cancelled call is in doubt; the person says to make it again, and the session finishes", async () => {
  const db = join(dir, "on.db");
  await withTmux(
    pdaRun(db, { perception: [snap(), achieved("waited")], decision: [SLOW] }),
    { cols: 110, rows: 45, cwd: PACKAGE_ROOT },
    async (t) => {
      await t.waitFor("faulty.slow 1/30", { timeoutMs: 30_000 });
      await t.sendKeys("C-c");
      await t.waitFor("What now?", { timeoutMs: 15_000 });
      expect(await t.screen()).toMatch(/Ctrl-C cancelled step 0's code/);
      await t.sendKeys("Enter"); // Go on
      // The step runs again by replay; the cancelled call may have reached the server, and slow is not
      // marked safe to repeat, so the person is asked.
      await t.waitFor("Did this call happen?", { timeoutMs: 15_000 });
      expect(await t.screen()).toMatch(/sent faulty\.slow with:/);
      await t.sendKeys("Up", "Up"); // from the default (skip) to "Make it again"
      await t.sendKeys("Enter");
      expect(await t.waitForExit({ timeoutMs: 30_000 })).toBe(0);
      expect(await t.output()).toMatch(/answer waited/);
    },
  );
  const sqlite = new Database(db, { readonly: true });
  try {
    const human = sqlite.prepare("SELECT kind, answer, answered_by FROM human_inputs").all();
    expect(human).toEqual([
      { kind: "interrupt", answer: "continue", answered_by: "terminal" },
      { kind: "in_doubt", answer: "repeat", answered_by: "terminal" },
    ]);
    const calls = sqlite
      .prepare("SELECT tool, seq, state, ok, error_kind, decided_by FROM tool_calls ORDER BY id")
      .all();
    expect(calls).toEqual([
      { tool: "slow", seq: 0, state: "in_doubt", ok: 0, error_kind: "TOOL_CANCELLED", decided_by: null },
      { tool: "slow", seq: 0, state: "done", ok: 1, error_kind: null, decided_by: "terminal:repeat" },
    ]);
  } finally {
    sqlite.close();
  }
});

it("abort: the session ends aborted", async () => {
  const db = join(dir, "abort.db");
  await withTmux(
    pdaRun(db, { perception: [snap()], decision: [SLOW] }),
    { cols: 110, rows: 45, cwd: PACKAGE_ROOT },
    async (t) => {
      await t.waitFor("faulty.slow 1/30", { timeoutMs: 30_000 });
      await t.sendKeys("C-c");
      await t.waitFor("What now?", { timeoutMs: 15_000 });
      await t.sendKeys("Down", "Down");
      await t.sendKeys("Enter"); // Abort the session
      expect(await t.waitForExit({ timeoutMs: 30_000 })).toBe(1);
      expect(await t.output()).toMatch(/aborted/);
    },
  );
  const sqlite = new Database(db, { readonly: true });
  try {
    expect(sqlite.prepare("SELECT status FROM sessions").get()).toEqual({ status: "aborted" });
  } finally {
    sqlite.close();
  }
});
