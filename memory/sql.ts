/** Prepared statements cached per connection, so each SQL text is compiled once. */
import type Database from "better-sqlite3";

const cache = new WeakMap<Database.Database, Map<string, Database.Statement>>();

export function stmt<Row = unknown>(db: Database.Database, sql: string): Database.Statement<unknown[], Row> {
  let byText = cache.get(db);
  if (!byText) cache.set(db, (byText = new Map()));
  let s = byText.get(sql);
  if (!s) byText.set(sql, (s = db.prepare(sql)));
  return s as Database.Statement<unknown[], Row>;
}

/** As stmt, with rows read as arrays in the statement's column order (cached apart from stmt's, so neither mode leaks). */
export function rawStmt<Row extends unknown[]>(
  db: Database.Database,
  sql: string,
): Database.Statement<unknown[], Row> {
  let byText = rawCache.get(db);
  if (!byText) rawCache.set(db, (byText = new Map()));
  let s = byText.get(sql);
  if (!s) byText.set(sql, (s = db.prepare(sql).raw(true)));
  return s as Database.Statement<unknown[], Row>;
}

const rawCache = new WeakMap<Database.Database, Map<string, Database.Statement>>();

/** SQLite stores booleans as 0/1. */
export function bit(b: boolean): number {
  return b ? 1 : 0;
}
