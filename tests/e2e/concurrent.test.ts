/**
 * Many `pda run` at once on one store, with the bundled servers (issue #16): on a small machine every run
 * starting all four servers used to miss the 20 s initialize, and every session then ran with no tools. Now
 * 8 runs at once (the tool lists not cached yet: each starts every server) all answer with their tool calls,
 * and 16 at once (lists cached: each starts only math, at its first call) all answer or fail saying why —
 * none goes on without its tools. Real processes, the real config, one shared SQLite file.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT, distPath } from "../../core/index.js";

const dir = mkdtempSync(join(tmpdir(), "pda-concurrent-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const DB = join(dir, "pda.db");

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

function run(): Promise<Outcome> {
  const args = [
    distPath("main.js"),
    "--config",
    join(PACKAGE_ROOT, "config"),
    "--db",
    DB,
    "run",
    "What is 32 + 5 - 3 * 2",
    "--model",
    `scripted:${join(PACKAGE_ROOT, "config/demo/calculator.yaml")}`,
    "--json",
  ];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      { env: { PATH: process.env.PATH ?? "", HOME: dir, NO_COLOR: "1" }, timeout: 240_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Tool calls that succeeded, per session id. */
function okCalls(): Map<string, number> {
  const db = new Database(DB, { readonly: true });
  try {
    const rows = db
      .prepare("SELECT session_id AS id, count(*) AS n FROM tool_calls WHERE ok = 1 GROUP BY session_id")
      .all() as { id: string; n: number }[];
    return new Map(rows.map((r) => [r.id, r.n]));
  } finally {
    db.close();
  }
}

const answered = (o: Outcome) => {
  const summary = JSON.parse(o.stdout) as { session_id: string; status: string; tool_calls: number };
  expect(summary.status).toBe("succeeded");
  expect(summary.tool_calls).toBe(3);
  return summary.session_id;
};

describe("many runs at once on one store", () => {
  it("8 at once, nothing cached: all answer, each with its 3 tool calls", { timeout: 600_000 }, async () => {
    const outcomes = await Promise.all(Array.from({ length: 8 }, run));
    for (const o of outcomes) expect({ code: o.code, stderr: o.stderr }).toEqual({ code: 0, stderr: "" });
    const calls = okCalls();
    for (const o of outcomes) expect(calls.get(answered(o))).toBe(3);
  });

  it(
    "16 at once, lists cached: each answers with its tool calls or fails saying why",
    { timeout: 600_000 },
    async () => {
      const outcomes = await Promise.all(Array.from({ length: 16 }, run));
      const calls = okCalls();
      for (const o of outcomes) {
        if (o.code === 0) expect(calls.get(answered(o))).toBe(3);
        else {
          // A typed failure (a server or model out of reach: 3) with its message; never a session without tools.
          expect(o.code).toBe(3);
          expect(o.stderr).toMatch(/^error .*(server|model)/im);
        }
      }
    },
  );
});
