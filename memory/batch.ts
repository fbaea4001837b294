/** Rows for batch runs and their items, kept generic: the batch runner decides what an item's output is. */
import type Database from "better-sqlite3";
import { StoreError } from "../core/index.js";
import type { Sanitizer } from "./sanitize.js";
import type { BatchItem, BatchRun } from "./schemas.js";
import { stmt } from "./sql.js";

export function startRun(
  db: Database.Database,
  run: { id: string; input_file?: string | null; options?: Record<string, unknown> },
  clean: Sanitizer,
  now: string,
): void {
  stmt(
    db,
    `INSERT INTO batch_runs (id, input_file, options_json, status, started_at) VALUES (?, ?, ?, 'running', ?)
     ON CONFLICT(id) DO UPDATE SET status = 'running', finished_at = NULL`,
  ).run(run.id, clean.optText(run.input_file), clean.json(run.options ?? {}), now);
}

export function finishRun(db: Database.Database, runId: string, status: string, now: string): void {
  const r = stmt(db, "UPDATE batch_runs SET status = ?, finished_at = ? WHERE id = ?").run(
    status,
    now,
    runId,
  );
  if (r.changes === 0) throw new StoreError("STORE_NOT_FOUND", `no batch run with id "${runId}"`);
}

/** Insert or update one item (keyed by run id + item key). */
export function saveItem(
  db: Database.Database,
  item: Omit<BatchItem, "started_at" | "finished_at"> &
    Partial<Pick<BatchItem, "started_at" | "finished_at">>,
  clean: Sanitizer,
): void {
  stmt(
    db,
    `INSERT INTO batch_items (run_id, item_key, query, status, session_id, output_json, started_at, finished_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT(run_id, item_key) DO UPDATE SET query = excluded.query, status = excluded.status,
       session_id = excluded.session_id, output_json = excluded.output_json,
       started_at = coalesce(excluded.started_at, started_at), finished_at = excluded.finished_at`,
  ).run(
    item.run_id,
    clean.text(item.item_key),
    clean.text(item.query),
    item.status,
    item.session_id,
    item.output === null || item.output === undefined ? null : clean.json(item.output),
    item.started_at ?? null,
    item.finished_at ?? null,
  );
}

export function getRun(db: Database.Database, runId: string): BatchRun {
  type Row = Omit<BatchRun, "options"> & { options_json: string };
  const r = stmt<Row>(db, "SELECT * FROM batch_runs WHERE id = ?").get(runId);
  if (!r) throw new StoreError("STORE_NOT_FOUND", `no batch run with id "${runId}"`);
  return {
    id: r.id,
    input_file: r.input_file,
    options: JSON.parse(r.options_json) as Record<string, unknown>,
    status: r.status,
    started_at: r.started_at,
    finished_at: r.finished_at,
  };
}

/** A run's items in the order they were first saved. */
export function items(db: Database.Database, runId: string): BatchItem[] {
  type Row = Omit<BatchItem, "output"> & { output_json: string | null };
  return stmt<Row>(db, "SELECT * FROM batch_items WHERE run_id = ? ORDER BY rowid")
    .all(runId)
    .map((r) => ({
      run_id: r.run_id,
      item_key: r.item_key,
      query: r.query,
      status: r.status,
      session_id: r.session_id,
      output: r.output_json === null ? null : (JSON.parse(r.output_json) as unknown),
      started_at: r.started_at,
      finished_at: r.finished_at,
    }));
}
