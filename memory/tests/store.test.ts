import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AgentSession, StoreError, newSession } from "../../core/index.js";
import { SCHEMA_VERSION, SessionStore } from "../index.js";
import { simulateSession } from "./simulate.js";

let dir: string;
let store: SessionStore;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-store-"));
  store = SessionStore.open(join(dir, "nested", "pda.db"));
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

function storeError(fn: () => unknown): StoreError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StoreError);
    return e as StoreError;
  }
  throw new Error("expected a StoreError");
}

describe("SessionStore", () => {
  it("opens a new file in WAL mode at the latest schema version", () => {
    expect(store.db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(store.db.pragma("foreign_keys", { simple: true })).toBe(1);
    expect(store.db.pragma("user_version", { simple: true })).toBe(SCHEMA_VERSION);
  });

  it("gives back a finished session exactly as written (JSON round trip)", () => {
    const written = simulateSession(store, {
      id: "s-roundtrip",
      query: "What is 32 + 5 - 3 * 2",
      steps: 4,
      replanAfter: [1],
      failingTools: [2],
      humanAfter: 0,
      statusReason: "done early",
    });
    const read = store.getSession("s-roundtrip");
    expect(read).toEqual(written);
    expect(AgentSession.parse(JSON.parse(JSON.stringify(read)))).toEqual(written);
    // The plan written before its steps existed lists them once the session is finished.
    expect(read.plan_versions.map((p) => [p.version, p.reason, p.steps])).toEqual([
      [1, "initial", [0, 1]],
      [2, "replan_after_failure", [2, 3]],
    ]);
  });

  it("keeps a finished session's snapshots, plans and steps once, in their rows, not in its JSON too", () => {
    const written = simulateSession(store, { id: "s-once", query: "add", steps: 3, replanAfter: [0] });
    const json = JSON.parse(
      store.db.prepare("SELECT session_json FROM sessions WHERE id = 's-once'").pluck().get() as string,
    ) as AgentSession;
    expect([json.snapshots, json.plan_versions, json.steps]).toEqual([[], [], []]);
    expect(json.state).toEqual(written.state);
    expect(store.getSession("s-once")).toEqual(written);
  });

  it("reads a finished session written by an older store, its lists in its JSON and in no rows", () => {
    const written = simulateSession(store, { id: "s-old", query: "add", steps: 2 });
    store.db.prepare("UPDATE sessions SET session_json = ? WHERE id = 's-old'").run(JSON.stringify(written));
    for (const t of ["steps", "snapshots", "plan_versions"])
      store.db.prepare(`DELETE FROM ${t} WHERE session_id = 's-old'`).run();
    expect(store.getSession("s-old")).toEqual(written);
  });

  it("rebuilds an unfinished session from the rows written so far", () => {
    const written = simulateSession(store, {
      id: "s-open",
      query: "add things",
      steps: 3,
      replanAfter: [0],
      humanAfter: 1,
      noFinish: true,
    });
    const read = store.getSession("s-open");
    expect(read.status).toBe("running"); // this process is alive, so not interrupted
    expect(read.snapshots).toEqual(written.snapshots);
    expect(read.steps).toEqual(written.steps);
    expect(read.plan_versions).toEqual(written.plan_versions);
    expect(read.state.human_inputs).toEqual(written.state.human_inputs);
    expect(read.usage.llm_calls).toBe(written.usage.llm_calls);
    expect(read.usage.tokens).toBe(written.usage.tokens);
    expect(read.usage.tool_calls).toBe(6);
  });

  it("logs LLM calls in order with everything replay needs, and tool calls with their step", () => {
    simulateSession(store, { id: "s-llm", query: "q", steps: 2, failingTools: [1] });
    const calls = store.llmCalls("s-llm");
    expect(calls.map((c) => c.role)).toEqual(["perception", "decision", "perception", "perception"]);
    expect(calls[1]!.value).toEqual(JSON.parse(calls[1]!.raw_response));
    const tools = store.toolCalls({ session_id: "s-llm" });
    expect(tools.map((t) => [t.step_index, t.tool, t.ok])).toEqual([
      [0, "multiply", true],
      [0, "add", true],
      [1, "multiply", true],
      [1, "add", false],
    ]);
    expect(tools[3]!.error_kind).toBe("TOOL_ERROR");
    expect(store.toolCalls({ ok: false })).toHaveLength(1);
    expect(store.toolCalls({ tool: "multiply", limit: 1 })).toHaveLength(1);
  });

  it("reads a session's tool calls with a statement prepared once per filter shape (a batch reads every query's)", () => {
    simulateSession(store, { id: "s-a", query: "q", steps: 2 });
    simulateSession(store, { id: "s-b", query: "q", steps: 1 });
    const prepare = vi.spyOn(store.db, "prepare");
    try {
      const a = store.toolCalls({ session_id: "s-a" });
      const b = store.toolCalls({ session_id: "s-b" });
      expect(a.length).toBeGreaterThan(b.length);
      expect(store.toolCalls({ session_id: "s-a" })).toEqual(a);
      expect(prepare.mock.calls.filter(([sql]) => /FROM tool_calls/.test(String(sql)))).toHaveLength(1);
    } finally {
      prepare.mockRestore();
    }
  });

  it("keeps each model call's cost: a session's calls add up to its usage.cost_usd, finished or not", () => {
    const price = { input_per_mtok: 0.5, output_per_mtok: 3 };
    const sum = (id: string) => store.llmCalls(id).reduce((n, c) => n + c.cost_usd!, 0);
    const done = simulateSession(store, { id: "s-paid", query: "q", steps: 2, replanAfter: [0], price });
    expect(store.llmCalls("s-paid").map((c) => c.cost_usd)).toEqual(
      store.llmCalls("s-paid").map((c) => (c.input_tokens * 0.5 + c.output_tokens * 3) / 1e6),
    );
    expect(done.usage.cost_usd).toBeGreaterThan(0);
    expect(sum("s-paid")).toBeCloseTo(store.getSession("s-paid").usage.cost_usd, 12);
    expect(store.timeline("s-paid").usage.cost_usd).toBeCloseTo(done.usage.cost_usd, 12);
    expect(
      store
        .timeline("s-paid")
        .events.flatMap((e) => (e.kind === "llm" ? [e.call.cost_usd] : []))
        .every((c) => c! > 0),
    ).toBe(true);
    // A session whose writer has not finished it: its cost so far is what its logged calls cost.
    const open = simulateSession(store, { id: "s-paying", query: "q", steps: 2, noFinish: true, price });
    expect(store.getSession("s-paying").usage.cost_usd).toBeCloseTo(open.usage.cost_usd, 12);
    expect(store.timeline("s-paying").usage.cost_usd).toBeCloseTo(sum("s-paying"), 12);
    // A model without a price has no cost rather than a made-up zero.
    simulateSession(store, { id: "s-free", query: "q", steps: 1 });
    expect(store.llmCalls("s-free").map((c) => c.cost_usd)).toEqual([undefined, undefined, undefined]);
    expect(store.getSession("s-free").usage.cost_usd).toBe(0);
  });

  it("accepts an unambiguous id prefix and names ambiguous or unknown ones", () => {
    simulateSession(store, { id: "abc-111", query: "one", steps: 1 });
    simulateSession(store, { id: "abc-222", query: "two", steps: 1 });
    expect(store.getSession("abc-1").original_query).toBe("one");
    expect(store.resolveId("abc-2")).toBe("abc-222");
    expect(storeError(() => store.getSession("abc")).code).toBe("STORE_AMBIGUOUS_ID");
    expect(storeError(() => store.getSession("zzz")).code).toBe("STORE_NOT_FOUND");
  });

  it("lists sessions newest first, filtered by words and status", () => {
    let t = Date.parse("2025-01-01T00:00:00Z");
    const now = () => new Date((t += 1000)).toISOString();
    simulateSession(store, { id: "l1", query: "factorial of five", steps: 1, now });
    simulateSession(store, {
      id: "l2",
      query: "weather in Paris",
      steps: 1,
      status: "failed",
      statusReason: "no server",
      now,
    });
    simulateSession(store, { id: "l3", query: "factorials again", steps: 2, now });
    expect(store.listSessions().map((s) => s.session_id)).toEqual(["l3", "l2", "l1"]);
    expect(store.listSessions({ search: "factor" }).map((s) => s.session_id)).toEqual(["l3", "l1"]);
    expect(store.listSessions({ status: "failed" }).map((s) => [s.session_id, s.status_reason])).toEqual([
      ["l2", "no server"],
    ]);
    expect(store.listSessions({ limit: 1 })).toHaveLength(1);
    const l3 = store.listSessions({ search: "factorials" })[0]!;
    expect([l3.steps, l3.tool_calls, l3.llm_calls]).toEqual([2, 4, 4]);
  });

  it("reports a session marked interrupted as such, keeping its steps", () => {
    simulateSession(store, { id: "s-int", query: "long task", steps: 2, noFinish: true });
    expect(store.listSessions({ status: "running" }).map((s) => s.session_id)).toEqual(["s-int"]);
    store.markInterrupted("s-int", "stopped by Ctrl-C");
    expect(store.listSessions({ status: "interrupted" }).map((s) => s.session_id)).toEqual(["s-int"]);
    expect(store.listSessions({ status: "running" })).toEqual([]);
    const s = store.getSession("s-int");
    expect(s.status_reason).toBe("interrupted: stopped by Ctrl-C");
    expect(s.steps.map((x) => x.status)).toEqual(["completed", "completed"]);
    expect(store.timeline("s-int").session.status).toBe("interrupted");
  });

  it("reports a running session whose owner process is gone as interrupted", () => {
    simulateSession(store, { id: "s-dead", query: "q", steps: 1, noFinish: true });
    // A pid that cannot be alive: above the kernel's pid_max.
    store.db.prepare("UPDATE sessions SET owner_pid = 99999999 WHERE id = 's-dead'").run();
    expect(store.listSessions()[0]!.status).toBe("interrupted");
    expect(store.getSession("s-dead").status_reason).toMatch(/^interrupted: its process \(pid 99999999\)/);
  });

  it("builds the timeline in the order things happened", () => {
    simulateSession(store, { id: "s-tl", query: "q", steps: 2, replanAfter: [0], humanAfter: 1 });
    const tl = store.timeline("s-tl");
    const kinds = tl.events.filter((e) => e.kind !== "llm").map((e) => e.kind);
    expect(kinds).toEqual(["snapshot", "plan", "step", "snapshot", "plan", "step", "snapshot", "human"]);
    const step = tl.events.find((e) => e.kind === "step");
    expect(step?.kind === "step" && step.tool_calls.map((c) => c.tool)).toEqual(["multiply", "add"]);
    expect(tl.events.filter((e) => e.kind === "llm")).toHaveLength(5);
    expect(tl.usage.llm_calls).toBe(5);
    expect(tl.session.status).toBe("succeeded");
  });

  describe("writes only what changed", () => {
    let t: number;
    let clocked: SessionStore;
    beforeEach(() => {
      t = Date.parse("2025-03-01T10:00:00Z");
      const iso = () => new Date(t).toISOString();
      clocked = SessionStore.open(join(dir, "clocked.db"), {
        clock: { now: () => t, iso, sleep: async () => {} },
      });
    });
    afterEach(() => clocked.close());
    const at = (seconds: number) =>
      new Date(Date.parse("2025-03-01T10:00:00Z") + seconds * 1000).toISOString();

    const session = () => newSession("count the apples", "w1", at(0));
    const snapshot = (index: number, requirement: string, summary: string) => ({
      index,
      snapshot_type: "step_result" as const,
      created_at: at(index),
      snapshot: {
        entities: [],
        result_requirement: requirement,
        original_goal_achieved: false,
        reasoning: "r",
        local_goal_achieved: true,
        local_reasoning: "ok",
        last_tooluse_summary: "none",
        solution_summary: summary,
        confidence: 0.5,
      },
    });
    const step = (index: number, status: "pending" | "completed"): AgentSession["steps"][number] => ({
      index,
      description: `step ${index}`,
      type: "CODE",
      code: "return 1",
      status,
      attempts: status === "pending" ? 0 : 1,
      plan_version: 1,
    });
    const stepUpdatedAt = (index: number) =>
      clocked.db
        .prepare("SELECT updated_at FROM steps WHERE session_id = 'w1' AND idx = ?")
        .pluck()
        .get(index);

    it("an unfinished session was last written when its last step was saved", () => {
      clocked.startSession(session());
      t += 5_000;
      clocked.saveSnapshot("w1", snapshot(0, "a count", "not ready yet"));
      t += 7_000;
      clocked.saveStep("w1", step(0, "pending"));
      expect(clocked.listSessions()[0]).toMatchObject({ updated_at: at(12), duration_ms: 12_000 });
      expect(clocked.getSession("w1").usage.ms).toBe(12_000);
    });

    it("finishSession rewrites the rows that changed since they were saved, and leaves the others", () => {
      const s = session();
      clocked.startSession(s);
      t += 1_000;
      s.steps.push(step(0, "completed"), step(1, "pending"));
      clocked.saveStep("w1", structuredClone(s.steps[0]!));
      clocked.saveStep("w1", structuredClone(s.steps[1]!));
      s.steps[1]!.status = "completed"; // changed, not saved again
      s.status = "succeeded";
      t += 1_000;
      clocked.finishSession(s);
      expect([stepUpdatedAt(0), stepUpdatedAt(1)]).toEqual([at(1), at(2)]);
      expect(clocked.getSession("w1").steps).toEqual(s.steps);
    });

    it("a write that failed is written again by finishSession", () => {
      const s = session();
      clocked.startSession(s);
      s.steps.push(step(0, "pending"));
      clocked.saveStep("w1", structuredClone(s.steps[0]!));
      clocked.db.exec(`CREATE TEMP TRIGGER refuse BEFORE UPDATE ON steps WHEN new.status = 'completed'
        BEGIN SELECT RAISE(ABORT, 'refused'); END`);
      s.steps[0]!.status = "completed";
      expect(storeError(() => clocked.saveStep("w1", structuredClone(s.steps[0]!))).code).toBe(
        "STORE_WRITE_FAILED",
      );
      clocked.db.exec("DROP TRIGGER refuse");
      s.status = "succeeded";
      clocked.finishSession(s);
      expect(clocked.db.prepare("SELECT status FROM steps WHERE session_id = 'w1'").pluck().get()).toBe(
        "completed",
      );
    });

    it("the search index is touched only when the text it holds changes", () => {
      clocked.startSession(session());
      const segments = () => clocked.db.prepare("SELECT count(*) FROM sessions_fts_data").pluck().get();
      clocked.saveSnapshot("w1", snapshot(0, "a count of apples", "not ready yet"));
      const before = segments();
      clocked.saveSnapshot("w1", snapshot(1, "a count of apples", "not ready yet"));
      clocked.saveSnapshot("w1", snapshot(2, "a count of apples", "not ready yet"));
      expect(segments()).toBe(before);
      clocked.saveSnapshot("w1", snapshot(3, "a count of pears", "seven pears"));
      expect(clocked.listSessions({ search: "pears" }).map((x) => x.session_id)).toEqual(["w1"]);
      expect(clocked.listSessions({ search: "apples" }).map((x) => x.session_id)).toEqual(["w1"]); // the query
      expect(clocked.listSessions({ search: "ready" })).toEqual([]);
      clocked.db.exec("INSERT INTO sessions_fts(sessions_fts) VALUES ('integrity-check')");
    });
  });

  it("stores oversized results and responses truncated, with their full size", () => {
    const small = SessionStore.open(join(dir, "small.db"), {
      limits: { maxResultChars: 1000, maxTextChars: 5000 },
    });
    try {
      simulateSession(small, { id: "s-big", query: "big", steps: 2, bigResult: { step: 1, chars: 200_000 } });
      small.recordLlmCall("s-big", {
        role: "decision",
        provider: "p",
        model: "m",
        ok: false,
        input_tokens: 1,
        output_tokens: 1,
        latency_ms: 1,
        attempts: 2,
        prompt: "p".repeat(20_000),
        raw_response: "r".repeat(30_000),
        error: "invalid",
        started_at: new Date().toISOString(),
      });
      const row = small.db
        .prepare(
          "SELECT result_bytes, result_truncated, length(result_json) AS len FROM steps WHERE session_id = 's-big' AND idx = 1",
        )
        .get() as { result_bytes: number; result_truncated: number; len: number };
      expect(row.result_bytes).toBe(200_002); // the JSON string with its quotes
      expect(row.result_truncated).toBe(1);
      expect(row.len).toBeLessThan(1200);
      const value = small.getSession("s-big").steps[1]!.execution_result!.value as {
        $truncated: { bytes: number };
      };
      expect(value.$truncated.bytes).toBe(200_002);
      const llm = small.db
        .prepare(
          "SELECT prompt_bytes, length(raw_response) AS r, raw_response_bytes FROM llm_calls ORDER BY id DESC LIMIT 1",
        )
        .get() as Record<string, number>;
      expect(llm).toMatchObject({ prompt_bytes: 20_000, raw_response_bytes: 30_000 });
      // The prompt is kept in parts (migration 10): what is cut is the text read back.
      expect(small.llmCalls("s-big").at(-1)!.prompt.length).toBeLessThan(5100);
      expect(llm.r).toBeLessThan(5100);
      expect(small.timeline("s-big").events.some((e) => e.kind === "step" && e.result_truncated)).toBe(true);
    } finally {
      small.close();
    }
  });

  it("keeps batch runs and items", () => {
    store.startBatchRun({ id: "run1", input_file: "queries.csv", options: { concurrency: 2 } });
    store.saveBatchItem({
      run_id: "run1",
      item_key: "1",
      query: "q1",
      status: "running",
      session_id: null,
      output: null,
    });
    simulateSession(store, { id: "b1", query: "q1", steps: 1 });
    store.saveBatchItem({
      run_id: "run1",
      item_key: "1",
      query: "q1",
      status: "succeeded",
      session_id: "b1",
      output: { answer: "31" },
    });
    store.finishBatchRun("run1");
    expect(store.batchRun("run1")).toMatchObject({
      input_file: "queries.csv",
      options: { concurrency: 2 },
      status: "finished",
    });
    expect(store.batchItems("run1")).toMatchObject([
      { item_key: "1", status: "succeeded", session_id: "b1", output: { answer: "31" } },
    ]);
    expect(
      storeError(() =>
        store.saveBatchItem({
          run_id: "nope",
          item_key: "1",
          query: "q",
          status: "x",
          session_id: null,
          output: null,
        }),
      ).code,
    ).toBe("STORE_UNKNOWN_SESSION");
  });

  it("refuses writes for a session that was never started", () => {
    const e = storeError(() =>
      store.recordToolCall("ghost", 0, {
        server: "m",
        tool: "t",
        ok: true,
        latency_ms: 1,
        bytes: 1,
        started_at: "x",
      }),
    );
    expect(e.code).toBe("STORE_UNKNOWN_SESSION");
    expect(e.message).toContain("ghost");
  });

  it("refuses a database written by a newer pda, and a file that is not a database", () => {
    const newer = join(dir, "newer.db");
    const raw = new Database(newer);
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    const e = storeError(() => SessionStore.open(newer));
    expect(e.code).toBe("STORE_NEWER_SCHEMA");
    expect(e.message).toContain(newer);

    const junk = join(dir, "junk.db");
    writeFileSync(junk, "this is not sqlite ".repeat(100));
    expect(storeError(() => SessionStore.open(junk)).code).toBe("STORE_CORRUPT");
    expect(storeError(() => SessionStore.open(join(dir, "missing.db"), { mustExist: true })).code).toBe(
      "STORE_NOT_FOUND",
    );
  });

  it("reports a stored session that no longer matches the schema as corrupt", () => {
    simulateSession(store, { id: "s-bad", query: "q", steps: 1 });
    store.db
      .prepare(
        "UPDATE sessions SET session_json = json_set(session_json, '$.status', 'nonsense') WHERE id = 's-bad'",
      )
      .run();
    const e = storeError(() => store.getSession("s-bad"));
    expect(e.code).toBe("STORE_CORRUPT");
    expect(e.message).toContain("s-bad");
  });
});

describe("secrets", () => {
  const SECRET = "sk-test-9f8e7d6c5b4a3210";
  const CONFIGURED = "hunter2-configured-pw";

  it("never reach the database file: every text column of every table, and the raw file bytes", () => {
    process.env.PDA_TEST_API_KEY = SECRET;
    let s: SessionStore | undefined;
    try {
      const path = join(dir, "secret.db");
      s = SessionStore.open(path, { secrets: [CONFIGURED] });
      const marker = `${SECRET} "${SECRET}" and ${CONFIGURED}`;
      simulateSession(s, {
        id: "s-secret",
        query: `use key ${SECRET}`,
        steps: 2,
        marker,
        failingTools: [1],
        humanAfter: 0,
      });
      s.recordLlmCall("s-secret", {
        role: "decision",
        provider: "gemini",
        model: "m",
        ok: true,
        input_tokens: 1,
        output_tokens: 1,
        latency_ms: 1,
        attempts: 1,
        prompt: `key=${SECRET}`,
        raw_response: JSON.stringify({ code: `fetch("x", {key: "${SECRET}\\n"})` }),
        value: { [SECRET]: [CONFIGURED] },
        started_at: new Date().toISOString(),
      });
      s.startBatchRun({ id: "r", input_file: `/tmp/${SECRET}.csv`, options: { token: SECRET } });
      s.saveBatchItem({
        run_id: "r",
        item_key: SECRET,
        query: SECRET,
        status: "done",
        session_id: "s-secret",
        output: { a: CONFIGURED },
      });
      s.markInterrupted("s-secret", SECRET); // no-op on a finished session, must not leak either

      // A dump in the spirit of sqlite3's .dump / iterdump: every column of every row of every table.
      const tables = s.db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .pluck()
        .all() as string[];
      expect(tables).toEqual(expect.arrayContaining(["sessions", "steps", "llm_calls", "sessions_fts_data"]));
      let cells = 0;
      for (const t of tables) {
        for (const row of s.db.prepare(`SELECT * FROM "${t}"`).raw().all() as unknown[][]) {
          for (const v of row) {
            const text = Buffer.isBuffer(v) ? v.toString("latin1") : String(v);
            cells++;
            expect(text, `table ${t}`).not.toContain(SECRET);
            expect(text, `table ${t}`).not.toContain(CONFIGURED);
          }
        }
      }
      expect(cells).toBeGreaterThan(200);
      expect(s.getSession("s-secret").original_query).toBe("use key [REDACTED:PDA_TEST_API_KEY]");
      s.db.pragma("wal_checkpoint(TRUNCATE)");
      s.close();
      const bytes = readFileSync(path).toString("latin1");
      expect(bytes).toContain("REDACTED");
      expect(bytes).not.toContain(SECRET);
      expect(bytes).not.toContain(CONFIGURED);
    } finally {
      delete process.env.PDA_TEST_API_KEY;
      s?.close();
    }
  });
});
