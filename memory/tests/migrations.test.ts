import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MIGRATIONS, SCHEMA_VERSION, SessionStore } from "../index.js";
import { migrate } from "../migrations.js";

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "store-v1.sql");

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-migrate-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function fixtureDb(): string {
  const path = join(dir, "old.db");
  const db = new Database(path);
  db.exec(readFileSync(FIXTURE, "utf8"));
  expect(db.pragma("user_version", { simple: true })).toBe(1);
  db.close();
  return path;
}

describe("migrations", () => {
  it("are numbered from 1 in increasing order, the last one the schema version", () => {
    // Branches number their migrations apart (one may land 12 before another's 11): order is what counts.
    const versions = MIGRATIONS.map((m) => m.version);
    expect(versions[0]).toBe(1);
    expect(versions).toEqual([...new Set(versions)].sort((a, b) => a - b));
    expect(SCHEMA_VERSION).toBe(versions.at(-1));
  });

  it("upgrade a version-1 store: data kept, search index built from it, batch tables added", () => {
    const store = SessionStore.open(fixtureDb());
    try {
      expect(store.db.pragma("user_version", { simple: true })).toBe(SCHEMA_VERSION);
      const ok = store.getSession("fixture-v1-succeeded");
      expect(ok.status).toBe("succeeded");
      expect(ok.steps).toHaveLength(2);
      expect(ok.plan_versions.map((p) => p.reason)).toEqual(["initial", "replan_after_failure"]);
      expect(ok.state.human_inputs).toHaveLength(1);
      expect(store.timeline("fixture-v1-s").events.length).toBeGreaterThan(8);

      // Rows written before the FTS index existed are searchable after the upgrade. A person answered in
      // this one, so memory leaves it out (migration 9) until they say it may be remembered.
      expect(store.searchMemory("factorial of 5 plus 3")).toEqual([]);
      store.rememberHumanAnswers("fixture-v1-succeeded");
      const hits = store.searchMemory("factorial of 5 plus 3");
      expect(hits.map((h) => [h.session_id, h.kind])).toEqual([["fixture-v1-succeeded", "solution"]]);
      const warn = store.searchMemory("weather in Paris");
      expect(warn[0]).toMatchObject({
        kind: "warning",
        reason: "tried and failed because the weather server timed out",
      });

      store.startBatchRun({ id: "after-upgrade" });
      expect(store.batchRun("after-upgrade").status).toBe("running");
    } finally {
      store.close();
    }
  });

  it("upgrade a version-6 store: its model calls keep their figures, with no cost; new calls store theirs", () => {
    // The fixture as the previous pda left it: every migration up to 6 applied.
    const path = fixtureDb();
    const old = new Database(path);
    migrate(old, path, 6);
    const columns = (db: Database.Database) =>
      (db.pragma("table_info(llm_calls)") as Array<{ name: string }>).map((c) => c.name);
    expect(columns(old)).not.toContain("cost_usd");
    old.close();

    const store = SessionStore.open(path);
    try {
      expect(store.db.pragma("user_version", { simple: true })).toBe(SCHEMA_VERSION);
      expect(columns(store.db)).toContain("cost_usd");
      const before = store.llmCalls("fixture-v1-succeeded");
      expect(before.map((c) => [c.role, c.input_tokens, c.output_tokens, c.cost_usd])).toEqual([
        ["perception", 100, 45, undefined],
        ["decision", 101, 60, undefined],
        ["perception", 102, 57, undefined],
        ["decision", 103, 60, undefined],
        ["perception", 104, 46, undefined],
      ]);
      store.recordLlmCall("fixture-v1-succeeded", { ...before[0]!, cost_usd: 0.000185, started_at: "later" });
      expect(store.llmCalls("fixture-v1-succeeded").map((c) => c.cost_usd)).toEqual([
        ...before.map(() => undefined),
        0.000185,
      ]);
    } finally {
      store.close();
    }
  });

  it("leave an up-to-date store alone on the next open", () => {
    const path = fixtureDb();
    SessionStore.open(path).close();
    const store = SessionStore.open(path);
    try {
      expect(store.db.pragma("user_version", { simple: true })).toBe(SCHEMA_VERSION);
      expect(store.listSessions()).toHaveLength(2);
      expect(store.db.pragma("integrity_check", { simple: true })).toBe("ok");
    } finally {
      store.close();
    }
  });
  it("index a step's logged calls without their replays, so a step resumed many times reads only its log", () => {
    const store = SessionStore.open(fixtureDb());
    try {
      const plan = (sql: string) =>
        (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all("s", 0) as Array<{ detail: string }>)
          .map((r) => r.detail)
          .join("; ");
      const { sql } = store.db
        .prepare("SELECT sql FROM sqlite_master WHERE name = 'tool_calls_step'")
        .get() as { sql: string };
      expect(sql).toContain("state != 'replayed'");
      // The resume's read of a step's log goes through it.
      expect(
        plan(`SELECT seq FROM tool_calls WHERE session_id = ? AND step_index = ? AND seq IS NOT NULL
          AND state != 'replayed' ORDER BY seq, id`),
      ).toContain("USING INDEX tool_calls_step");
    } finally {
      store.close();
    }
  });
});
