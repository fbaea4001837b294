/**
 * The durable-step log on a real SQLite file: a call's intent (written before it is sent), its finished row,
 * and what a resumed step reads of them — in flight, done, or in doubt once the process that sent it is gone.
 */
import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { distPath, newSession, type ToolCallRecord } from "../../core/index.js";
import { SessionStore, intentDir, readIntentFile } from "../index.js";
import { migrate } from "../migrations.js";

let dir: string;
let store: SessionStore;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-intents-"));
  store = SessionStore.open(join(dir, "pda.db"));
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const intent = (seq: number, tool = "charge") => ({
  seq,
  server: "shop",
  tool,
  args_sha: `sha-${seq}`,
  args_json: `{"id":${seq}}`,
  started_at: "2026-11-24T10:00:00.000Z",
});
const done = (seq: number, extra: Partial<ToolCallRecord> = {}): ToolCallRecord => ({
  server: "shop",
  tool: "charge",
  ok: true,
  latency_ms: 3,
  bytes: 10,
  started_at: "2026-11-24T10:00:00.000Z",
  seq,
  state: "done",
  args_sha: `sha-${seq}`,
  args_json: `{"id":${seq}}`,
  result_json: `{"receipt":"r-${seq}"}`,
  ...extra,
});
const intents = () => (store.db.prepare("SELECT count(*) AS n FROM tool_intents").get() as { n: number }).n;

function started(): string {
  const s = newSession("charge twice", "s-1", "2026-11-24T10:00:00.000Z");
  store.startSession(s);
  return s.session_id;
}

describe("a step's logged calls", () => {
  it("a finished call is done; one sent with no outcome is sent, and the timeline shows it so", () => {
    const id = started();
    store.intent(id, 0, intent(0));
    store.recordToolCall(id, 0, done(0));
    store.intent(id, 0, intent(1));
    expect(store.stepCalls(id, 0).map((c) => [c.seq, c.state, c.ok, c.result_json])).toEqual([
      [0, "done", true, '{"receipt":"r-0"}'],
      [1, "sent", false, null],
    ]);
    const step = store.timeline(id).events.flatMap((e) => (e.kind === "tool" ? [e.call] : []));
    expect(step.map((c) => [c.seq, c.state ?? "done"])).toEqual([
      [0, "done"],
      [1, "sent"],
    ]);
  });

  it("markInDoubt turns each open intent into an in-doubt row, once, and keeps the finished ones", () => {
    const id = started();
    store.intent(id, 0, intent(0));
    store.recordToolCall(id, 0, done(0));
    store.intent(id, 0, intent(1));
    store.intent(id, 2, intent(0, "refund"));
    expect(store.markInDoubt(id)).toBe(2);
    expect(store.markInDoubt(id)).toBe(0);
    expect(intents()).toBe(0);
    expect(store.stepCalls(id, 0).map((c) => [c.seq, c.state, c.error_kind])).toEqual([
      [0, "done", null],
      [1, "in_doubt", "IN_DOUBT"],
    ]);
    expect(store.stepCalls(id, 2).map((c) => [c.tool, c.state])).toEqual([["refund", "in_doubt"]]);
    const row = store.db.prepare(
      "SELECT args_json, args_sha FROM tool_calls WHERE state = 'in_doubt' AND seq = 1",
    );
    expect(row.get()).toEqual({ args_json: '{"id":1}', args_sha: "sha-1" });
  });

  it("a logged call's arguments are whole unless the store redacted or cut them, finished, sent or in doubt", () => {
    store.close();
    store = SessionStore.open(join(dir, "pda.db"), {
      secrets: ["hunter2-long-secret"],
      limits: { maxTextChars: 40 },
    });
    const id = started();
    const args = [
      '{"id":0}',
      '{"id":1,"pin":"hunter2-long-secret"}',
      `{"id":2,"note":"${"x".repeat(60)}"}`,
      // What a marker looks like, sent as it is: not told apart from one the store wrote, so checked by hash.
      '{"id":3,"note":"[REDACTED:mine]"}',
    ];
    args.forEach((a, seq) => store.recordToolCall(id, 0, done(seq, { args_json: a })));
    args.forEach((a, seq) => store.intent(id, 1, { ...intent(seq), args_json: a }));
    const whole = (step: number) => store.stepCalls(id, step).map((c) => [c.seq, c.args_whole]);
    const expected = [
      [0, true],
      [1, false],
      [2, false],
      [3, false],
    ];
    expect(whole(0)).toEqual(expected);
    expect(whole(1)).toEqual(expected);
    expect(store.stepCalls(id, 0)[1]!.args_json).toContain("[REDACTED:");
    expect(store.markInDoubt(id)).toBe(4);
    expect(whole(1)).toEqual(expected);
  });

  it("a replayed copy is not the call: its intent stays open", () => {
    const id = started();
    store.intent(id, 0, intent(0));
    store.recordToolCall(id, 0, done(0, { state: "replayed" }));
    expect(store.stepCalls(id, 0).map((c) => c.state)).toEqual(["sent"]);
  });

  it("a finished session drops the intents of finished calls and keeps the open ones", () => {
    const s = newSession("q", "s-2", "2026-11-24T10:00:00.000Z");
    store.startSession(s);
    store.intent(s.session_id, 0, intent(0));
    store.recordToolCall(s.session_id, 0, done(0));
    store.intent(s.session_id, 0, intent(1));
    store.finishSession({ ...s, status: "failed" });
    expect(store.db.prepare("SELECT seq FROM tool_intents").all()).toEqual([{ seq: 1 }]);
  });
});

const fileOf = (id: string) => readIntentFile(intentDir(join(dir, "pda.db")), id);

describe("a position logged more than once", () => {
  it("reads as its finished call whatever the rows' order, else as its first row", () => {
    const id = started();
    // A call left in doubt, made again by a later run of the step (after its rows for later positions).
    store.recordToolCall(id, 0, done(0, { state: "in_doubt", ok: false, result_json: undefined }));
    store.recordToolCall(id, 0, done(1, { result_json: '{"receipt":"first"}' }));
    store.recordToolCall(id, 0, done(1, { result_json: '{"receipt":"second"}' }));
    store.recordToolCall(id, 0, done(0, { result_json: '{"receipt":"again"}' }));
    store.recordToolCall(id, 0, done(2, { state: "in_doubt", ok: false, result_json: undefined }));
    store.recordToolCall(id, 0, done(2, { state: "in_doubt", ok: false, error_kind: "later" }));
    expect(store.stepCalls(id, 0).map((c) => [c.seq, c.state, c.result_json, c.error_kind])).toEqual([
      [0, "done", '{"receipt":"again"}', null],
      [1, "done", '{"receipt":"first"}', null],
      [2, "in_doubt", null, null],
    ]);
  });
});

describe("replayed calls that copy their logged rows", () => {
  const replayed = (seq: number, at: string, extra: Partial<ToolCallRecord> = {}): ToolCallRecord => ({
    ...done(seq),
    latency_ms: 0,
    bytes: 0,
    started_at: at,
    state: "replayed",
    copies_logged: true,
    ...extra,
  });
  const runs = () =>
    store.db.prepare("SELECT step_index, first_seq, count FROM replayed_runs ORDER BY ord").all();

  it("confirmed together, are one row that points at the logged ones, and read back as rows in order", () => {
    const id = started();
    for (const seq of [0, 1, 2]) {
      store.intent(id, 0, intent(seq));
      store.recordToolCall(id, 0, done(seq));
    }
    const at = "2026-11-24T10:05:00.000Z";
    store.batch(() => {
      for (const seq of [0, 1, 2]) store.recordToolCall(id, 0, replayed(seq, at));
    });
    // The call past the log, made for real by the resumed step.
    store.intent(id, 0, intent(3));
    store.recordToolCall(id, 0, done(3, { started_at: at }));
    expect(runs()).toEqual([{ step_index: 0, first_seq: 0, count: 3 }]);
    expect(
      (
        store.db.prepare("SELECT count(*) AS n FROM tool_calls WHERE state = 'replayed'").get() as {
          n: number;
        }
      ).n,
    ).toBe(0);
    const step = store.toolCalls({ session_id: id });
    expect(step.map((c) => [c.seq, c.state ?? "done"])).toEqual([
      [0, "done"],
      [1, "done"],
      [2, "done"],
      [0, "replayed"],
      [1, "replayed"],
      [2, "replayed"],
      [3, "done"],
    ]);
    // Each is the logged call, replayed at its time, taking none.
    expect(step[4]).toMatchObject({
      server: "shop",
      tool: "charge",
      ok: true,
      latency_ms: 0,
      bytes: 0,
      started_at: at,
      args_json: '{"id":1}',
      result_json: '{"receipt":"r-1"}',
    });
    // What a resume reads as the log is the live calls only; the session counts them once.
    expect(store.stepCalls(id, 0).map((c) => c.state)).toEqual(["done", "done", "done", "done"]);
    store.finishSession({ ...store.getSession(id), status: "succeeded" });
    expect(store.listSessions({}).find((x) => x.session_id === id)?.tool_calls).toBe(4);
  });

  it("a replayed row that differs from the log splits the runs, and keeps its place between them", () => {
    const id = started();
    for (const seq of [0, 1, 2]) store.recordToolCall(id, 0, done(seq));
    const at = "2026-11-24T10:05:00.000Z";
    store.batch(() => {
      store.recordToolCall(id, 0, replayed(0, at));
      store.recordToolCall(
        id,
        0,
        replayed(1, at, { copies_logged: undefined, decided_by: "human:give_result" }),
      );
      store.recordToolCall(id, 0, replayed(2, at));
    });
    expect(runs()).toEqual([
      { step_index: 0, first_seq: 0, count: 1 },
      { step_index: 0, first_seq: 2, count: 1 },
    ]);
    const rows = store.toolCalls({ session_id: id }).filter((c) => c.state === "replayed");
    expect(rows.map((c) => [c.seq, c.decided_by ?? null])).toEqual([
      [0, null],
      [1, "human:give_result"],
      [2, null],
    ]);
  });

  it("count in no tool's statistics: they never reached a server", () => {
    const id = started();
    store.recordToolCall(id, 0, done(0));
    const at = "2026-11-24T10:05:00.000Z";
    store.recordToolCall(id, 0, replayed(0, at));
    store.recordToolCall(
      id,
      0,
      replayed(0, at, { copies_logged: undefined, decided_by: "human:give_result" }),
    );
    expect(store.toolStats().map((t) => [t.tool, t.calls])).toEqual([["charge", 1]]);
    expect(store.agentToolStats().map((t) => [t.tool, t.calls])).toEqual([["charge", 1]]);
  });

  it("confirmed as a replayed step's, they wait for the store's next write, and its readers see them at once", () => {
    const id = started();
    for (const seq of [0, 1]) store.recordToolCall(id, 0, done(seq));
    const at = "2026-11-24T10:05:00.000Z";
    store.replayed(() => {
      for (const seq of [0, 1]) store.recordToolCall(id, 0, replayed(seq, at));
    });
    // No commit of their own, nor at the step's end: they record a replay, nothing that was sent.
    store.endStep(id, 0);
    expect(runs()).toEqual([]);
    // The next write (here another session's start) takes them with it, as it takes live calls' rows.
    store.startSession(newSession("q", "s-next", "2026-11-24T10:06:00.000Z"));
    expect(runs()).toEqual([{ step_index: 0, first_seq: 0, count: 2 }]);
  });

  it("confirmed as a replayed step's, a row that is not the logged one over again commits at once, with them", () => {
    const id = started();
    for (const seq of [0, 1]) store.recordToolCall(id, 0, done(seq));
    const at = "2026-11-24T10:05:00.000Z";
    store.replayed(() => {
      store.recordToolCall(id, 0, replayed(0, at));
      store.recordToolCall(
        id,
        0,
        replayed(1, at, {
          copies_logged: undefined,
          ok: false,
          error_kind: "REPLAY_MISMATCH",
          error_message: "the step took another path",
        }),
      );
    });
    expect(runs()).toEqual([{ step_index: 0, first_seq: 0, count: 1 }]);
    expect(store.db.prepare("SELECT seq, error_kind FROM tool_calls WHERE state = 'replayed'").all()).toEqual(
      [{ seq: 1, error_kind: "REPLAY_MISMATCH" }],
    );
  });

  it("confirmed as a replayed step's and waiting, they are committed when the store closes", () => {
    const id = started();
    store.recordToolCall(id, 0, done(0));
    store.replayed(() => store.recordToolCall(id, 0, replayed(0, "2026-11-24T10:05:00.000Z")));
    store.close();
    const db = new Database(join(dir, "pda.db"), { readonly: true });
    try {
      expect(db.prepare("SELECT first_seq, count FROM replayed_runs").all()).toEqual([
        { first_seq: 0, count: 1 },
      ]);
    } finally {
      db.close();
    }
    store = SessionStore.open(join(dir, "pda.db"));
  });

  it("outside a batch, each is a run of one", () => {
    const id = started();
    for (const seq of [0, 1]) store.recordToolCall(id, 0, done(seq));
    const at = "2026-11-24T10:05:00.000Z";
    for (const seq of [0, 1]) store.recordToolCall(id, 0, replayed(seq, at));
    expect(runs()).toEqual([
      { step_index: 0, first_seq: 0, count: 1 },
      { step_index: 0, first_seq: 1, count: 1 },
    ]);
    expect(store.toolCalls({ session_id: id }).filter((c) => c.state === "replayed")).toHaveLength(2);
  });
});

describe("the intents' journal file", () => {
  it("holds an intent from before its call is sent, with no SQLite write, and a new process finds it", () => {
    const id = started();
    store.intent(id, 0, intent(0));
    expect(intents()).toBe(0);
    expect(fileOf(id).map((i) => [i.step_index, i.seq, i.tool, i.args_json])).toEqual([
      [0, 0, "charge", '{"id":0}'],
    ]);
    // The process dies here (store left open, never closed); the next one opens the same file.
    const next = SessionStore.open(join(dir, "pda.db"));
    try {
      expect(next.stepCalls(id, 0).map((c) => [c.seq, c.state])).toEqual([[0, "sent"]]);
      expect(next.markInDoubt(id)).toBe(1);
      expect(next.stepCalls(id, 0).map((c) => [c.seq, c.state])).toEqual([[0, "in_doubt"]]);
      expect(fileOf(id)).toEqual([]);
    } finally {
      next.close();
    }
  });

  it("a step's end empties the file and keeps only the calls that never finished, in tool_intents", () => {
    const id = started();
    store.intent(id, 0, intent(0));
    store.recordToolCall(id, 0, done(0));
    store.intent(id, 0, intent(1)); // cut short by a stop: no finished row
    store.endStep(id, 0);
    expect(fileOf(id)).toEqual([]);
    expect(store.db.prepare("SELECT step_index, seq FROM tool_intents").all()).toEqual([
      { step_index: 0, seq: 1 },
    ]);
    expect(store.stepCalls(id, 0).map((c) => [c.seq, c.state])).toEqual([
      [0, "done"],
      [1, "sent"],
    ]);
    // Run again, the call finishes: the next end drops its intent.
    store.intent(id, 0, intent(1));
    store.recordToolCall(id, 0, done(1));
    store.endStep(id, 0);
    expect(intents()).toBe(0);
    expect(fileOf(id)).toEqual([]);
  });

  it("a step's end in a process that found an earlier process's lines keeps those that never finished", () => {
    const id = started();
    store.intent(id, 0, intent(0)); // this process dies with the call in flight
    const next = SessionStore.open(join(dir, "pda.db"));
    try {
      next.intent(id, 0, intent(1));
      next.recordToolCall(id, 0, done(1));
      next.endStep(id, 0);
      expect(fileOf(id)).toEqual([]);
      expect(next.db.prepare("SELECT seq FROM tool_intents").all()).toEqual([{ seq: 0 }]);
    } finally {
      next.close();
    }
  });

  it("leaves out a last line cut short (its write never returned, so its call was never sent)", () => {
    const id = started();
    store.intent(id, 0, intent(0));
    const file = join(intentDir(join(dir, "pda.db"))!, `${id}.jsonl`);
    appendFileSync(file, '{"session_id":"s-1","step_index":0,"seq":1,"ser');
    expect(store.stepCalls(id, 0).map((c) => [c.seq, c.state])).toEqual([[0, "sent"]]);
    expect(store.markInDoubt(id)).toBe(1);
    expect(existsSync(file)).toBe(false);
  });

  it("redacts secrets in the arguments before they reach the file", () => {
    const secretStore = SessionStore.open(join(dir, "pda.db"), { secrets: ["hunter2-very-secret"] });
    try {
      const id = "s-3";
      secretStore.startSession(newSession("q", id, "2026-11-24T10:00:00.000Z"));
      secretStore.intent(id, 0, { ...intent(0), args_json: '{"password":"hunter2-very-secret"}' });
      const file = join(intentDir(join(dir, "pda.db"))!, `${id}.jsonl`);
      expect(readFileSync(file, "utf8")).not.toContain("hunter2-very-secret");
    } finally {
      secretStore.close();
    }
  });

  it("a store in memory keeps its intents in tool_intents", () => {
    const mem = SessionStore.open(":memory:");
    try {
      mem.startSession(newSession("q", "s-4", "2026-11-24T10:00:00.000Z"));
      mem.intent("s-4", 0, intent(0));
      expect(mem.db.prepare("SELECT seq FROM tool_intents").all()).toEqual([{ seq: 0 }]);
      expect(mem.stepCalls("s-4", 0).map((c) => c.state)).toEqual(["sent"]);
    } finally {
      mem.close();
    }
  });
});

describe("a finished call's row in its window", () => {
  /**
   * A real process (the built store) that logs a live call of step 0, finishes it, logs the intents of the
   * `next` calls after it (sent, never finished), and is killed at once.
   */
  function killedAfterTheCall(id: string, next = 0): void {
    const more = Array.from(
      { length: next },
      (_, i) => `store.intent(${JSON.stringify(id)}, 0, ${JSON.stringify(intent(i + 1))});`,
    ).join("\n");
    const script = `
      const { SessionStore } = await import(${JSON.stringify(pathToFileURL(distPath("memory/index.js")).href)});
      const store = SessionStore.open(${JSON.stringify(join(dir, "pda.db"))});
      store.intent(${JSON.stringify(id)}, 0, ${JSON.stringify(intent(0))});
      store.recordToolCall(${JSON.stringify(id)}, 0, ${JSON.stringify(done(0))});
      ${more}
      process.kill(process.pid, "SIGKILL");`;
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
    expect([r.signal, r.stderr]).toEqual(["SIGKILL", ""]);
  }

  it("is not committed by the call itself: a later write, or the window's end, commits it", () => {
    const id = started();
    const reader = new Database(join(dir, "pda.db"), { readonly: true });
    try {
      const rows = () => reader.prepare("SELECT seq, state FROM tool_calls").all();
      store.intent(id, 0, intent(0));
      store.recordToolCall(id, 0, done(0));
      expect(rows()).toEqual([]); // another connection: not yet
      // Waiting in memory, not in an open transaction: another process can take the write lock at once.
      const writer = new Database(join(dir, "pda.db"), { timeout: 0 });
      try {
        expect(() => writer.prepare("BEGIN IMMEDIATE").run()).not.toThrow();
        writer.prepare("ROLLBACK").run();
      } finally {
        writer.close();
      }
      expect(store.stepCalls(id, 0).map((c) => [c.seq, c.state])).toEqual([[0, "done"]]); // this one: at once
      store.markInterrupted(id, "Ctrl-C"); // any other write is committed on return, and the window with it
      expect(rows()).toEqual([{ seq: 0, state: "done" }]);
    } finally {
      reader.close();
    }
  });

  it("gets no line of its own: it goes in the same write as the next call's intent, or none once committed", () => {
    const id = started();
    const file = join(intentDir(join(dir, "pda.db"))!, `${id}.jsonl`);
    const kinds = () =>
      readFileSync(file, "utf8")
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as { seq: number; state?: string })
        .map((l) => `${l.state ? "done" : "sent"} ${l.seq}`);
    store.intent(id, 0, intent(0));
    store.recordToolCall(id, 0, done(0));
    expect(kinds()).toEqual(["sent 0"]); // the call's end wrote nothing
    store.intent(id, 0, intent(1));
    expect(kinds()).toEqual(["sent 0", "done 0", "sent 1"]);
    store.recordToolCall(id, 0, done(1));
    store.flush(); // its window commits before the next call: its row needs no line
    store.intent(id, 0, intent(2));
    expect(kinds()).toEqual(["sent 0", "done 0", "sent 1", "sent 2"]);
  });

  it("gets its line at once when its window cannot commit (another process holds the write lock)", async () => {
    const path = join(dir, "locked.db");
    const own = SessionStore.open(path, { busyTimeoutMs: 0 });
    const other = new Database(path, { timeout: 0 });
    try {
      own.startSession(newSession("q", "s-9", "2026-11-24T10:00:00.000Z"));
      const file = join(intentDir(path)!, "s-9.jsonl");
      const kinds = () =>
        readFileSync(file, "utf8")
          .split("\n")
          .filter((l) => l !== "")
          .map((l) => (JSON.parse(l) as { state?: string }).state ?? "sent");
      own.intent("s-9", 0, intent(0));
      own.recordToolCall("s-9", 0, done(0));
      expect(kinds()).toEqual(["sent"]);
      other.prepare("BEGIN IMMEDIATE").run();
      await new Promise((r) => setTimeout(r, 150)); // the window's commit fails: SQLITE_BUSY
      expect(kinds()).toEqual(["sent", "done"]);
      other.prepare("ROLLBACK").run();
      expect(own.stepCalls("s-9", 0).map((c) => [c.seq, c.state])).toEqual([[0, "done"]]);
    } finally {
      other.close();
      own.close();
    }
  });

  it("killed after the next call was sent: the line that went with its intent keeps the call done", () => {
    const id = started();
    killedAfterTheCall(id, 1);
    // The killed process's window never committed; the lines it wrote before the next call are what remains.
    expect(store.db.prepare("SELECT count(*) AS n FROM tool_calls").get()).toEqual({ n: 0 });
    expect(store.stepCalls(id, 0).map((c) => [c.seq, c.state, c.result_json])).toEqual([
      [0, "done", '{"receipt":"r-0"}'],
      [1, "sent", null],
    ]);
    const shown = store.timeline(id).events.flatMap((e) => (e.kind === "tool" ? [e.call] : []));
    expect(shown.map((c) => [c.seq, c.state ?? "done"])).toEqual([
      [0, "done"],
      [1, "sent"],
    ]);
    expect(store.markInDoubt(id)).toBe(1);
    expect(store.db.prepare("SELECT seq, state, result_json FROM tool_calls ORDER BY seq").all()).toEqual([
      { seq: 0, state: "done", result_json: '{"receipt":"r-0"}' },
      { seq: 1, state: "in_doubt", result_json: null },
    ]);
    expect(fileOf(id)).toEqual([]);
  });

  it("killed before its window commits and before anything else was written: the call is in doubt, not lost", () => {
    const id = started();
    killedAfterTheCall(id);
    // Its outcome never reached the file or the store: the resume knows it was sent, not whether it happened.
    expect(store.db.prepare("SELECT count(*) AS n FROM tool_calls").get()).toEqual({ n: 0 });
    expect(store.stepCalls(id, 0).map((c) => [c.seq, c.state])).toEqual([[0, "sent"]]);
    expect(store.markInDoubt(id)).toBe(1);
    expect(store.db.prepare("SELECT seq, state FROM tool_calls").all()).toEqual([
      { seq: 0, state: "in_doubt" },
    ]);
    expect(fileOf(id)).toEqual([]);
  });
});

describe("migration 14", () => {
  it("moves the calls a version-13 store holds as sent into tool_intents, where a resume finds them", () => {
    const path = join(dir, "v13.db");
    const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "store-v1.sql");
    const old = new Database(path);
    old.exec(readFileSync(FIXTURE, "utf8"));
    migrate(old, path, 13);
    old
      .prepare(
        `INSERT INTO tool_calls (session_id, step_index, seq, server, tool, ok, latency_ms, bytes, started_at, state,
          args_sha, args_json, ord) VALUES ('fixture-v1-succeeded', 0, 0, 'shop', 'charge', 0, 0, 0, 't', 'sent',
          'sha', '{"id":1}', 1)`,
      )
      .run();
    old.close();
    const upgraded = SessionStore.open(path);
    try {
      expect(upgraded.db.prepare("SELECT count(*) AS n FROM tool_calls WHERE state = 'sent'").get()).toEqual({
        n: 0,
      });
      expect(upgraded.stepCalls("fixture-v1-succeeded", 0).map((c) => [c.tool, c.state])).toEqual([
        ["charge", "sent"],
      ]);
      expect(upgraded.markInDoubt("fixture-v1-succeeded")).toBe(1);
    } finally {
      upgraded.close();
    }
  });
});
