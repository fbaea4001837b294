/**
 * Browsing sessions page by page (the web UI's list): filters by words, status, agent, batch run and creation
 * time, newest first, with keyset paging: a page after the first starts below the last row of the one before,
 * an index range, so page 2000 costs what page 1 costs, unlike OFFSET.
 *
 * Without words the order is (created_at, seq), which the created_at and (status, created_at) indexes hold.
 * With words the FTS5 index drives, newest first by its rowid (the session's seq, the order sessions were
 * started in this store) and stops after one page; ordering its matches by created_at instead sorts every
 * match (~140 ms for a word in 20k of 100k sessions, against ~8 ms).
 */
import type Database from "better-sqlite3";
import { StoreError } from "../core/index.js";
import { LIST_COLUMNS, allWordsQuery, listItem, type ListRow } from "./read.js";
import { BrowseOptions, type BatchRunSummary, type SessionPage } from "./schemas.js";
import { stmt } from "./sql.js";

/** The cursor is opaque to callers: base64url of the last row's [created_at, seq]. */
function encodeCursor(row: { created_at: string; seq: number }): string {
  return Buffer.from(JSON.stringify([row.created_at, row.seq])).toString("base64url");
}

function decodeCursor(cursor: string): [string, number] {
  try {
    const v = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown;
    if (Array.isArray(v) && typeof v[0] === "string" && Number.isSafeInteger(v[1]))
      return [v[0], v[1] as number];
  } catch {
    // falls through to the error below
  }
  throw new StoreError("STORE_BAD_CURSOR", `paging cursor "${cursor}" is not one this store gave out`);
}

export function browseSessions(db: Database.Database, options: BrowseOptions = {}): SessionPage {
  const o = BrowseOptions.parse(options);
  const where: string[] = [];
  const params: unknown[] = [];
  let from = "sessions s";
  let order = "s.created_at DESC, s.seq DESC";
  let after = "(s.created_at, s.seq) < (?, ?)";
  if (o.search !== undefined && o.search.trim() !== "") {
    const match = allWordsQuery(o.search);
    if (match === null) return { items: [], next: null };
    from = "sessions_fts f JOIN sessions s ON s.seq = f.rowid";
    order = "f.rowid DESC";
    after = "f.rowid < ?";
    where.push("sessions_fts MATCH ?");
    params.push(match);
  }
  // "interrupted" is a running row whose writer is gone: both are read as running and told apart below.
  if (o.status !== undefined) {
    where.push("s.status = ?");
    params.push(o.status === "interrupted" ? "running" : o.status);
  }
  if (o.agent !== undefined) {
    where.push("s.agent = ?");
    params.push(o.agent);
  }
  if (o.batch_run !== undefined) {
    where.push("s.id IN (SELECT session_id FROM batch_items WHERE run_id = ? AND session_id IS NOT NULL)");
    params.push(o.batch_run);
  }
  if (o.since !== undefined) {
    where.push("s.created_at >= ?");
    params.push(o.since);
  }
  if (o.until !== undefined) {
    where.push("s.created_at < ?");
    params.push(o.until);
  }
  if (o.after !== undefined) {
    const [createdAt, seq] = decodeCursor(o.after);
    where.push(after);
    params.push(...(order === "f.rowid DESC" ? [seq] : [createdAt, seq]));
  }
  const sql =
    `SELECT ${LIST_COLUMNS} FROM ${from} ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ` +
    `ORDER BY ${order} LIMIT ?`;
  // One row more than the page tells whether there is a next page without a count(*) over every match.
  const rows = stmt<ListRow>(db, sql).all(...params, o.limit + 1);
  const more = rows.length > o.limit;
  const page = more ? rows.slice(0, o.limit) : rows;
  let items = page.map(listItem);
  if (o.status === "running" || o.status === "interrupted")
    items = items.filter((i) => i.status === o.status);
  const last = page[page.length - 1];
  return { items, next: more && last ? encodeCursor(last) : null };
}

/** Batch runs, newest first, with how many of their items ended in each status. */
export function batchRuns(db: Database.Database, limit = 100): BatchRunSummary[] {
  type Row = {
    id: string;
    input_file: string | null;
    status: string;
    started_at: string;
    finished_at: string | null;
  };
  const runs = stmt<Row>(
    db,
    "SELECT id, input_file, status, started_at, finished_at FROM batch_runs ORDER BY started_at DESC LIMIT ?",
  ).all(limit);
  const counts = stmt<{ status: string; n: number }>(
    db,
    "SELECT status, count(*) AS n FROM batch_items WHERE run_id = ? GROUP BY status",
  );
  return runs.map((r) => {
    const by: Record<string, number> = {};
    for (const c of counts.all(r.id)) by[c.status] = c.n;
    return { ...r, items: Object.values(by).reduce((a, b) => a + b, 0), item_statuses: by };
  });
}

/**
 * A number that changes whenever another connection commits to the file (SQLite's data_version): the
 * cheap check a reader makes before it looks for what changed.
 */
export function changeMark(db: Database.Database): number {
  return db.pragma("data_version", { simple: true }) as number;
}
