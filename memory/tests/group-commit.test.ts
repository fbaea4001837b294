import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StoreError, distPath, newSession } from "../../core/index.js";
import { SessionStore, intentDir, readIntentFile } from "../index.js";

let dir: string;
let path: string;
let store: SessionStore;
let reader: Database.Database;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-group-"));
  path = join(dir, "pda.db");
  // A window far longer than any test: only flushes and durable writes commit.
  store = SessionStore.open(path, { groupCommitMs: 3_600_000 });
  reader = new Database(path, { readonly: true });
});
afterEach(() => {
  reader.close();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** What another process sees: only committed rows. */
const sessions = () =>
  (reader.prepare("SELECT id FROM sessions ORDER BY id").all() as { id: string }[]).map((r) => r.id);
const at = "2026-01-01T00:00:00.000Z";

describe("SessionStore with group commit", () => {
  it("keeps a window's session writes in one transaction that its own reads already see", () => {
    store.startSession(newSession("q1", "s1", at));
    store.startSession(newSession("q2", "s2", at));
    expect(store.getSession("s2").original_query).toBe("q2");
    expect(sessions()).toEqual([]);
    store.flush();
    expect(sessions()).toEqual(["s1", "s2"]);
  });

  it("commits the writes before a durable step's intent before the intent is written", () => {
    store.startSession(newSession("q", "s1", at));
    store.intent("s1", 0, {
      seq: 1,
      server: "math",
      tool: "add",
      args_sha: "x",
      args_json: "{}",
      started_at: at,
    });
    // The call may now be sent: a crash from here on must find its intent, and the writes before it.
    expect(readIntentFile(intentDir(join(dir, "pda.db")), "s1").map((i) => i.seq)).toEqual([1]);
    expect(sessions()).toEqual(["s1"]);
  });

  it("a step's end commits its finished calls before it empties the intents' file", () => {
    store.startSession(newSession("q", "s1", at));
    store.flush();
    store.intent("s1", 0, {
      seq: 0,
      server: "math",
      tool: "add",
      args_sha: "x",
      args_json: "{}",
      started_at: at,
    });
    store.recordToolCall("s1", 0, {
      server: "math",
      tool: "add",
      ok: true,
      latency_ms: 1,
      bytes: 1,
      started_at: at,
      seq: 0,
      state: "done",
    });
    store.endStep("s1", 0);
    expect(readIntentFile(intentDir(join(dir, "pda.db")), "s1")).toEqual([]);
    expect(reader.prepare("SELECT seq, state FROM tool_calls").all()).toEqual([{ seq: 0, state: "done" }]);
  });

  it("undoes a failing write alone and keeps the window's other writes", () => {
    store.startSession(newSession("q", "s1", at));
    const e = (() => {
      try {
        store.saveStep("no-such-session", { index: 0 } as never);
      } catch (err) {
        return err;
      }
    })();
    expect(e).toBeInstanceOf(StoreError);
    store.startSession(newSession("q", "s2", at));
    store.flush();
    expect(sessions()).toEqual(["s1", "s2"]);
  });

  it("commits the open window on close and when the process exits without closing", () => {
    store.startSession(newSession("q", "s1", at));
    store.close();
    expect(sessions()).toEqual(["s1"]);
    const url = pathToFileURL(distPath("memory/index.js")).href;
    execFileSync(process.execPath, [
      "--input-type=module",
      "-e",
      `const { SessionStore } = await import(${JSON.stringify(url)});
       const { newSession } = await import(${JSON.stringify(pathToFileURL(distPath("core/index.js")).href)});
       const s = SessionStore.open(${JSON.stringify(path)}, { groupCommitMs: 3600000 });
       s.startSession(newSession("q", "s-exit", ${JSON.stringify(at)}));
       process.exit(0);`,
    ]);
    expect(sessions()).toEqual(["s-exit", "s1"]);
  });

  it("commits on its own when the window ends", async () => {
    const quick = SessionStore.open(join(dir, "quick.db"), { groupCommitMs: 20 });
    const r = new Database(join(dir, "quick.db"), { readonly: true });
    try {
      quick.startSession(newSession("q", "s1", at));
      const deadline = Date.now() + 30_000;
      while ((r.prepare("SELECT count(*) AS n FROM sessions").get() as { n: number }).n === 0) {
        expect(Date.now()).toBeLessThan(deadline);
        await new Promise((res) => setTimeout(res, 10));
      }
    } finally {
      r.close();
      quick.close();
    }
  });
});
