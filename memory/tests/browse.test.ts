/** The session browser's reads: filters, keyset paging, batch runs and the change mark, on a real file. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StoreError, newSession, type SessionStatus } from "../../core/index.js";
import { SessionStore } from "../index.js";

let dir: string;
let store: SessionStore;

/** Sessions s0..s9 created a day apart (s9 newest); even ones by "coder", odd by "planner". */
function fill() {
  const statuses: SessionStatus[] = ["succeeded", "failed", "awaiting_human"];
  for (let i = 0; i < 10; i++) {
    const at = new Date(Date.UTC(2026, 10, 1 + i, 12)).toISOString();
    const s = newSession(i % 2 ? `convert ${i} miles to km` : `add ${i} and ${i}`, `s${i}`, at, {
      agent: i % 2 ? "planner" : "coder",
    });
    store.startSession(s);
    store.finishSession({ ...s, status: statuses[i % 3]! });
  }
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-browse-"));
  store = SessionStore.open(join(dir, "pda.db"));
  fill();
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const ids = (p: { items: { session_id: string }[] }) => p.items.map((i) => i.session_id);

describe("SessionStore.browseSessions", () => {
  it("pages newest first with a cursor until the last page, each session once", () => {
    const seen: string[] = [];
    let after: string | undefined;
    let pages = 0;
    do {
      const page = store.browseSessions({ limit: 3, after });
      seen.push(...ids(page));
      after = page.next ?? undefined;
      pages++;
    } while (after);
    expect(pages).toBe(4);
    expect(seen).toEqual(["s9", "s8", "s7", "s6", "s5", "s4", "s3", "s2", "s1", "s0"]);
  });

  it("a page after a cursor does not move when newer sessions are written meanwhile", () => {
    const first = store.browseSessions({ limit: 2 });
    const s = newSession("add 99 and 1", "s-new", new Date(Date.UTC(2026, 11, 1)).toISOString());
    store.startSession(s);
    expect(ids(store.browseSessions({ limit: 2, after: first.next! }))).toEqual(["s7", "s6"]);
    expect(ids(store.browseSessions({ limit: 1 }))).toEqual(["s-new"]);
  });

  it("filters by words, status, agent, batch run and creation time, together", () => {
    expect(ids(store.browseSessions({ search: "miles" }))).toEqual(["s9", "s7", "s5", "s3", "s1"]);
    expect(ids(store.browseSessions({ status: "failed" }))).toEqual(["s7", "s4", "s1"]);
    expect(ids(store.browseSessions({ agent: "coder", status: "succeeded" }))).toEqual(["s6", "s0"]);
    expect(ids(store.browseSessions({ since: "2026-11-03", until: "2026-11-06T00:00:00.000Z" }))).toEqual([
      "s4",
      "s3",
      "s2",
    ]);
    store.startBatchRun({ id: "run-1" });
    for (const id of ["s2", "s5"]) {
      store.saveBatchItem({
        run_id: "run-1",
        item_key: id,
        query: "q",
        status: "succeeded",
        session_id: id,
        output: null,
      });
    }
    expect(ids(store.browseSessions({ batch_run: "run-1" }))).toEqual(["s5", "s2"]);
    expect(ids(store.browseSessions({ batch_run: "run-1", search: "miles" }))).toEqual(["s5"]);
    expect(store.browseSessions({ search: "nothing-like-this" })).toEqual({ items: [], next: null });
  });

  it("rejects a cursor it did not give out, naming it", () => {
    expect(() => store.browseSessions({ after: "bogus" })).toThrow(StoreError);
    expect(() => store.browseSessions({ after: "bogus" })).toThrow(/cursor "bogus"/);
  });

  it("lists batch runs with item counts by status", () => {
    store.startBatchRun({ id: "run-1", input_file: "q.csv" });
    store.saveBatchItem({
      run_id: "run-1",
      item_key: "a",
      query: "q",
      status: "succeeded",
      session_id: "s1",
      output: null,
    });
    store.saveBatchItem({
      run_id: "run-1",
      item_key: "b",
      query: "q",
      status: "failed",
      session_id: "s2",
      output: null,
    });
    store.finishBatchRun("run-1");
    expect(store.batchRuns()).toEqual([
      expect.objectContaining({
        id: "run-1",
        input_file: "q.csv",
        status: "finished",
        items: 2,
        item_statuses: { succeeded: 1, failed: 1 },
      }),
    ]);
  });

  it("the change mark moves when another connection commits, not on reads", () => {
    const other = SessionStore.open(store.path);
    try {
      const before = store.changeMark();
      store.browseSessions();
      expect(store.changeMark()).toBe(before);
      other.startSession(newSession("q", "s-other", new Date().toISOString()));
      expect(store.changeMark()).not.toBe(before);
    } finally {
      other.close();
    }
  });
});
