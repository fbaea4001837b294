/**
 * A `pda run` killed with SIGKILL mid-session (a real child process, a real store, a slow tool holding the
 * step in flight): the session reads as interrupted, `pda resume` continues it from its last completed step,
 * and a live session on the same store is left alone.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { stringify } from "yaml";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../core/index.js";
import { intentDir, readIntentFile } from "../../memory/index.js";
import { achieved, code, snap, stepOk } from "../../agent/tests/harness.js";

const MAIN = join(PACKAGE_ROOT, "dist", "main.js");
let dir: string;
/** The config the resume runs with: the same server, whose `slow` now answers at once. */
let fast: string;
const children: ChildProcess[] = [];

function config(folder: string, ...args: string[]): void {
  writeFileSync(
    join(folder, "mcp_server_config.yaml"),
    stringify({
      servers: [
        {
          id: "faulty",
          command: process.execPath,
          args: [join(PACKAGE_ROOT, "dist/mcp_servers/testing/fault_server.js"), ...args],
          // The live session's hang() must outlast the test on a loaded machine (the default is 30 s).
          timeout_ms: 3_600_000,
        },
      ],
    }),
  );
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-e2e-crash-"));
  fast = join(dir, "fast");
  mkdirSync(fast);
  config(dir);
  config(fast, "--fast");
  // Steps in flight stay there until killed, however slow the machine: no sandbox time limit ends them first.
  writeFileSync(
    join(dir, "profiles.yaml"),
    stringify({ default: "t", profiles: { t: { sandbox: { timeout_ms: 3_600_000 } } } }),
  );
});
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function model(name: string, script: unknown): string {
  const p = join(dir, name);
  writeFileSync(p, stringify(script));
  return `scripted:${p}`;
}

function pda(args: string[], configDir = dir): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, "--config", configDir, ...args],
      { env: { ...process.env, NO_COLOR: "1" }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** `pda run` as a child that is killed, not awaited. */
function startRun(db: string, query: string, script: string): ChildProcess {
  const child = spawn(
    process.execPath,
    [MAIN, "--config", dir, "--db", db, "run", query, "--model", script, "--hil", "policy:fail"],
    { stdio: "ignore", env: { ...process.env, NO_COLOR: "1" } },
  );
  children.push(child);
  return child;
}

/** Poll the store until `sql` returns a row (the session's state, not a clock, says when to go on). */
async function waitForRow<T>(db: string, sql: string, ...params: unknown[]): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const sqlite = new Database(db, { readonly: true, timeout: 5000 });
      try {
        const row = sqlite.prepare(sql).get(...params) as T | undefined;
        if (row) return row;
      } finally {
        sqlite.close();
      }
    } catch (e) {
      // The first process may still be creating the file and its tables.
      if (!/no such table|unable to open|database is locked|SQLITE_BUSY/.test(String(e))) throw e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${sql}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const killed = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGKILL");
  });

const PLAN = ["Step 0: echo", "Step 1: wait", "Step 2: answer"];

it("a SIGKILLed session is interrupted; pda resume goes on from its last completed step; a live one is left alone", async () => {
  const db = join(dir, "crash.db");
  // Step 0 completes; step 1 is in flight in a slow tool call (ten minutes) when the process is killed.
  const doomed = startRun(
    db,
    "echo then wait",
    model("doomed.yaml", {
      perception: [snap(), stepOk()],
      decision: [
        code(PLAN, 0, "return await echo({ text: 'one' })"),
        code(PLAN, 1, "return await slow({ ms: 600000, steps: 600 })"),
      ],
    }),
  );
  // Another session on the same store stays in flight (a call that never answers) until the end.
  const live = startRun(
    db,
    "wait forever",
    model("live.yaml", {
      perception: [snap()],
      decision: [code(["Step 0: hang"], 0, "return await hang()")],
    }),
  );
  const { id } = await waitForRow<{ id: string }>(
    db,
    `SELECT s.id FROM sessions s JOIN steps t ON t.session_id = s.id
      WHERE s.original_query = 'echo then wait' AND t.idx = 1 AND t.status = 'pending'`,
  );
  // The slow call has been sent (its intent is logged): the kill leaves it in doubt.
  const sentDeadline = Date.now() + 60_000;
  while (!readIntentFile(intentDir(db), id).some((i) => i.tool === "slow")) {
    if (Date.now() > sentDeadline) throw new Error("timed out waiting for the slow call's intent");
    await new Promise((r) => setTimeout(r, 100));
  }
  const { id: liveId } = await waitForRow<{ id: string }>(
    db,
    `SELECT s.id FROM sessions s JOIN steps t ON t.session_id = s.id WHERE s.original_query = 'wait forever'`,
  );
  await killed(doomed);

  const listed = JSON.parse((await pda(["--db", db, "sessions", "--json"])).stdout) as Array<{
    session_id: string;
    status: string;
  }>;
  expect(Object.fromEntries(listed.map((s) => [s.session_id, s.status]))).toEqual({
    [id]: "interrupted",
    [liveId]: "running",
  });
  expect((await pda(["--db", db, "show", id])).stdout).toMatch(/interrupted/);

  // The live session is not taken from its process.
  const refused = await pda(["--db", db, "resume", liveId, "--model", model("none.yaml", {})]);
  expect(refused.code).toBe(2);
  expect(refused.stderr).toMatch(/is running \(its process is alive\)/);

  // Resumed: step 1's code runs again, step 0 is not redone. Its slow call was in flight, so it may or may not
  // have happened: slow is not marked safe to repeat, so a person decides (here: make it again).
  const answers = join(dir, "answers.yaml");
  writeFileSync(answers, stringify({ in_doubt: ["repeat"] }));
  const resumed = await pda(
    [
      "--db",
      db,
      "resume",
      id.slice(0, 8),
      "--model",
      model("resume.yaml", { perception: [achieved("waited")] }),
      "--hil",
      `scripted:${answers}`,
      "--json",
    ],
    fast,
  );
  expect(resumed.stderr).toBe("");
  expect(resumed.code).toBe(0);
  expect(JSON.parse(resumed.stdout)).toMatchObject({
    session_id: id,
    status: "succeeded",
    final_answer: "waited",
    steps: 2,
  });
  const sqlite = new Database(db, { readonly: true });
  try {
    const calls = sqlite
      .prepare("SELECT tool, ok, state, decided_by FROM tool_calls WHERE session_id = ? ORDER BY id")
      .all(id);
    expect(calls).toEqual([
      { tool: "echo", ok: 1, state: "done", decided_by: null },
      { tool: "slow", ok: 0, state: "in_doubt", decided_by: null },
      { tool: "slow", ok: 1, state: "done", decided_by: "scripted:repeat" },
    ]);
    const steps = sqlite.prepare("SELECT idx, status FROM steps WHERE session_id = ? ORDER BY idx").all(id);
    expect(steps).toEqual([
      { idx: 0, status: "completed" },
      { idx: 1, status: "completed" },
    ]);
    expect(sqlite.prepare("SELECT count(*) AS n FROM sessions").get()).toEqual({ n: 2 });
  } finally {
    sqlite.close();
  }
  // Finished now, it cannot be resumed again; the live one is still running.
  expect((await pda(["--db", db, "resume", id])).stderr).toMatch(/is succeeded/);
  const after = JSON.parse((await pda(["--db", db, "sessions", "--json"])).stdout) as Array<{
    session_id: string;
    status: string;
  }>;
  expect(after.find((s) => s.session_id === liveId)?.status).toBe("running");
  await killed(live);
}, 180_000); // a dozen node processes: slow on a busy machine
