/** Opening the SQLite file: parent folders, pragmas, migrations, and clear errors for what can go wrong. */
import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import { StoreError } from "../core/index.js";
import { migrate } from "./migrations.js";

export interface OpenDbOptions {
  /** How long a writer waits for another process's write lock before SQLITE_BUSY (ms). */
  busyTimeoutMs?: number;
  /**
   * "normal" (default): a committed write survives a crash of this process (WAL, synchronous=NORMAL);
   * "full": it also survives power loss, at the cost of an fsync per write.
   */
  durability?: "normal" | "full";
  /** Fail with STORE_NOT_FOUND instead of creating the file (read-only commands). */
  mustExist?: boolean;
}

export function openDatabase(path: string, options: OpenDbOptions = {}): Database.Database {
  const busyTimeoutMs = options.busyTimeoutMs ?? 15_000;
  const file = path === ":memory:" ? path : resolve(path);
  if (file !== ":memory:") {
    if (!existsSync(file)) {
      if (options.mustExist) {
        throw new StoreError(
          "STORE_NOT_FOUND",
          `no session store at ${file} (run a session first, or pass --db / set PDA_DB)`,
        );
      }
      // Private from the start: folders we make are the user's only, and the file is created 0600 before
      // SQLite opens it (SQLite gives the -wal and -shm files the database file's permissions).
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      try {
        writeFileSync(file, "", { flag: "wx", mode: 0o600 });
      } catch (e) {
        // Another process created it first: it did the same.
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw openFailed(file, e);
      }
    } else if (!options.mustExist) warnIfReadableByOthers(file);
  }
  let db: Database.Database;
  try {
    db = new Database(file, { timeout: busyTimeoutMs });
  } catch (e) {
    throw openFailed(file, e);
  }
  try {
    // Switching to WAL and recovering a crashed WAL take locks that can report SQLITE_BUSY without going
    // through the busy handler, so these first statements are retried until the busy timeout.
    withBusyRetry(busyTimeoutMs, () => {
      db.pragma(`busy_timeout = ${busyTimeoutMs}`);
      db.pragma("journal_mode = WAL");
    });
    db.pragma(`synchronous = ${options.durability === "full" ? "FULL" : "NORMAL"}`);
    db.pragma("foreign_keys = ON");
    db.pragma("temp_store = MEMORY"); // memory search's scratch FTS tables never touch the disk
    withBusyRetry(busyTimeoutMs, () => migrate(db, file));
    return db;
  } catch (e) {
    db.close();
    if (e instanceof StoreError) throw e;
    const code = (e as { code?: string }).code ?? "";
    if (code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT") {
      throw new StoreError("STORE_CORRUPT", `${file} is not a pda session store (or is damaged): ${code}`, {
        cause: e,
      });
    }
    throw openFailed(file, e);
  }
}

function openFailed(file: string, e: unknown): StoreError {
  return new StoreError("STORE_OPEN_FAILED", `cannot open session store ${file}: ${(e as Error).message}`, {
    cause: e,
  });
}

const warned = new Set<string>();

/**
 * A store that others can read was made so by someone (an older pda made files 0644, or the file is shared
 * on purpose): it is left as it is, and a process that writes to it says so once.
 */
function warnIfReadableByOthers(file: string): void {
  const mode = statSync(file).mode & 0o777;
  if ((mode & 0o077) === 0 || warned.has(file)) return;
  warned.add(file);
  process.emitWarning(
    `session store ${file} can be read by other users (mode ${mode.toString(8)}); ` +
      `it holds queries, answers and tool results: chmod 600 it unless it is shared on purpose`,
    { code: "PDA_STORE_PERMISSIONS" },
  );
}

function withBusyRetry<T>(timeoutMs: number, fn: () => T): T {
  const deadline = Date.now() + timeoutMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
    try {
      return fn();
    } catch (e) {
      const code = String((e as { code?: string }).code ?? "");
      if (!code.startsWith("SQLITE_BUSY") && code !== "SQLITE_LOCKED") throw e;
      if (Date.now() + delay > deadline) throw e;
      Atomics.wait(pause, 0, 0, delay); // a synchronous sleep: open() is synchronous by contract
    }
  }
}
