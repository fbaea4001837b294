/** Opening the SQLite file: parent folders, pragmas, migrations, and clear errors for what can go wrong. */
import { existsSync, mkdirSync } from "node:fs";
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
      mkdirSync(dirname(file), { recursive: true });
    }
  }
  let db: Database.Database;
  try {
    db = new Database(file, { timeout: busyTimeoutMs });
  } catch (e) {
    throw new StoreError("STORE_OPEN_FAILED", `cannot open session store ${file}: ${(e as Error).message}`, {
      cause: e,
    });
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
    throw new StoreError("STORE_OPEN_FAILED", `cannot open session store ${file}: ${(e as Error).message}`, {
      cause: e,
    });
  }
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
