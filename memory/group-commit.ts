/**
 * Group commit for a busy writer (a batch, a queue worker): the recorder's writes of a short window share one
 * SQLite transaction instead of one each. Every COMMIT appends the pages it touched to the WAL and flushes the
 * full-text index's pending terms as a new segment, so at ~20 writes a query one transaction per write was
 * most of the store's CPU. A crash loses at most the writes of the open window (the steps then in flight);
 * writes that must be durable before something leaves the process (a durable step's intent, a human's answer,
 * a batch row saved durable) commit the group at once. Readers on the same connection see the open window's
 * writes.
 */
import type Database from "better-sqlite3";
import { stmt } from "./sql.js";

const open = new Set<GroupCommit>();
let exitHook = false;

export class GroupCommit {
  private timer?: NodeJS.Timeout;
  /** A COMMIT that failed in the timer: thrown to the next write, which cannot know its rows were lost. */
  private failure?: Error;

  constructor(
    private readonly db: Database.Database,
    private readonly windowMs: number,
    /** Called when a COMMIT fails: the caller forgets what it noted as written. */
    private readonly onLost: (e: Error) => Error,
  ) {}

  /** Before a write: the group's transaction, opened when none is (another's outer transaction is left be). */
  begin(): void {
    if (this.failure) {
      const f = this.failure;
      this.failure = undefined;
      throw f;
    }
    if (this.timer || this.db.inTransaction) return;
    stmt(this.db, "BEGIN IMMEDIATE").run();
    open.add(this);
    if (!exitHook) {
      exitHook = true;
      // process.exit() and a natural end: what the open windows hold is committed, not rolled back.
      process.on("exit", () => {
        for (const g of open) g.flushQuietly();
      });
    }
    // Unref'd: an open window does not keep the process alive; the exit hook commits it.
    this.timer = setTimeout(() => this.flushQuietly(), this.windowMs).unref();
  }

  /** Commit the open window now. Throws the mapped error when the COMMIT fails (the window is rolled back). */
  flush(): void {
    if (!this.timer) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    open.delete(this);
    if (!this.db.open || !this.db.inTransaction) return;
    try {
      stmt(this.db, "COMMIT").run();
    } catch (e) {
      if (this.db.inTransaction) stmt(this.db, "ROLLBACK").run();
      throw this.onLost(e as Error);
    }
  }

  private flushQuietly(): void {
    try {
      this.flush();
    } catch (e) {
      this.failure = e as Error;
    }
  }
}
