/**
 * Where a live call's intent goes before the call is sent: a line appended to its session's journal file
 * beside the store (`<store>.intents/<session>.jsonl`), not a SQLite commit. A write(2) is in the page cache
 * when it returns, so it survives the process being killed (SIGKILL, a crash) as a WAL commit with
 * synchronous=NORMAL does; neither survives a power loss unless the store is opened with durability "full",
 * which fdatasyncs each write. It costs a few µs where a commit costs tens. A call's finished row may get a
 * line too (it has `state`, an intent has none), in the same write(2) as the next call's intent: the row
 * itself waits for a short window's commit with the rows after it, and a line is only needed for a row that
 * is still waiting when something more leaves the process (see SessionStore.intent). The store folds the
 * lines into tool_calls and tool_intents when they matter there: at a step's end (intents whose call never
 * finished), on resume (markInDoubt) and when the session finishes; then the file is emptied.
 */
import {
  closeSync,
  existsSync,
  fdatasyncSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import type { CallDbRow, IntentDbRow } from "./intents.js";

/** A journal file's lines: intents, and the finished rows of calls. */
export interface JournalLines {
  intents: IntentDbRow[];
  results: CallDbRow[];
}

/** The folder of a store's intent files; undefined for a store in memory (its intents stay in SQLite). */
export function intentDir(storePath: string): string | undefined {
  return storePath === ":memory:" || storePath === "" ? undefined : `${storePath}.intents`;
}

function fileOf(dir: string, sessionId: string): string {
  return join(dir, `${encodeURIComponent(sessionId)}.jsonl`);
}

/**
 * The intents a session's file holds (none when it has no file). A last line cut short was being written when
 * its process died: its write never returned, so its call was never sent, and it is left out.
 */
export function readIntentFile(dir: string | undefined, sessionId: string): IntentDbRow[] {
  return readJournalFile(dir, sessionId).intents;
}

/** A session's file's lines; a finished row's torn line was never written (its call is in doubt). */
export function readJournalFile(dir: string | undefined, sessionId: string): JournalLines {
  const out: JournalLines = { intents: [], results: [] };
  const file = dir && fileOf(dir, sessionId);
  // Most sessions never have a file (a batch's calls go to SQLite): a check costs ~3 µs, a read that throws ~40.
  if (!file || !existsSync(file)) return out;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return out;
    throw e;
  }
  for (const line of text.split("\n")) {
    if (line === "") continue;
    let row: IntentDbRow | CallDbRow;
    try {
      row = JSON.parse(line) as IntentDbRow | CallDbRow;
    } catch {
      continue; // torn last line: see above
    }
    // Lines written before migration 18 have no clock: the statements they go through name it.
    row.clock_json ??= null;
    if ("state" in row) out.results.push(row);
    else out.intents.push(row);
  }
  return out;
}

/** One store's open intent files, by session: kept open (O_APPEND) while the session runs here. */
export class IntentFiles {
  private readonly fds = new Map<string, number>();
  /**
   * By session whose file holds only lines this store wrote: those whose call has no finished row yet (by
   * "step:seq"), so a step's end needs neither to read the file nor to ask SQLite which calls finished.
   */
  private readonly unfinished = new Map<string, Map<string, IntentDbRow>>();
  private made = false;
  /** Sessions whose open file may hold lines: an empty one needs no ftruncate at a step's end. */
  private readonly written = new Set<string>();

  constructor(
    readonly dir: string,
    private readonly sync: boolean,
  ) {}

  /**
   * Appends one intent, after the finished rows of the session's earlier calls given (whose calls the store
   * has already noted finished), in one write(2): on return all of them survive this process dying (and a
   * power loss when `sync`).
   */
  append(row: IntentDbRow, finished: readonly CallDbRow[] = []): void {
    let text = "";
    for (const c of finished) text += `${JSON.stringify(c)}\n`;
    this.write(row.session_id, `${text}${JSON.stringify(row)}\n`);
    this.unfinished.get(row.session_id)?.set(`${row.step_index}:${row.seq}`, row);
  }

  /** Appends finished rows of the session's calls (whose calls the store has already noted finished). */
  appendResults(sessionId: string, rows: readonly CallDbRow[]): void {
    if (rows.length === 0) return;
    let text = "";
    for (const c of rows) text += `${JSON.stringify(c)}\n`;
    this.write(sessionId, text);
  }

  /** The intent this store appended for a call that has no finished row yet, when it knows it. */
  intentOf(sessionId: string, stepIndex: number, seq: number): IntentDbRow | undefined {
    return this.unfinished.get(sessionId)?.get(`${stepIndex}:${seq}`);
  }

  private write(sessionId: string, line: string): void {
    let fd = this.fds.get(sessionId);
    if (fd === undefined) {
      if (!this.made) {
        mkdirSync(this.dir, { recursive: true, mode: 0o700 });
        this.made = true;
      }
      fd = openSync(fileOf(this.dir, sessionId), "a", 0o600);
      this.fds.set(sessionId, fd);
      // Lines left by an earlier process: only reading the file tells which calls never finished.
      if (fstatSync(fd).size === 0) this.unfinished.set(sessionId, new Map());
    }
    this.written.add(sessionId);
    writeSync(fd, line);
    if (this.sync) fdatasyncSync(fd);
  }

  /** The call's finished row is written (committed, or in the group-commit window). */
  finished(sessionId: string, stepIndex: number, seq: number): void {
    this.unfinished.get(sessionId)?.delete(`${stepIndex}:${seq}`);
  }

  /**
   * The lines of the session's file whose call has no finished row, when this store wrote them all (else
   * undefined: the caller reads the file and asks the store).
   */
  openLines(sessionId: string): IntentDbRow[] | undefined {
    const open = this.unfinished.get(sessionId);
    return open && [...open.values()];
  }

  read(sessionId: string): JournalLines {
    return readJournalFile(this.dir, sessionId);
  }

  /** Whether this store wrote lines to the session's file since it was last emptied. */
  hasLines(sessionId: string): boolean {
    return this.written.has(sessionId);
  }

  /** Empties the session's file once its lines are folded into the store (kept open for the next step). */
  clear(sessionId: string): void {
    const fd = this.fds.get(sessionId);
    if (fd !== undefined) {
      if (this.written.delete(sessionId)) ftruncateSync(fd, 0);
      this.unfinished.set(sessionId, new Map());
    } else if (existsSync(fileOf(this.dir, sessionId))) unlinkSync(fileOf(this.dir, sessionId));
  }

  /** The session is over here (finished, or folded on resume): its file goes. */
  drop(sessionId: string): void {
    const fd = this.fds.get(sessionId);
    if (fd !== undefined) {
      closeSync(fd);
      this.fds.delete(sessionId);
    }
    this.unfinished.delete(sessionId);
    this.written.delete(sessionId);
    if (fd === undefined && !existsSync(fileOf(this.dir, sessionId))) return; // as in readJournalFile
    try {
      unlinkSync(fileOf(this.dir, sessionId));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
  }

  close(): void {
    for (const fd of this.fds.values()) closeSync(fd);
    this.fds.clear();
    this.unfinished.clear();
    this.written.clear();
  }
}
