/**
 * SessionStore: the SQLite session log (a SessionRecorder for the loop) plus the reads the CLI, memory
 * search and tool statistics need. One writer process per session; many processes may share the file.
 */
import type Database from "better-sqlite3";
import {
  ServerLogEntry,
  StoreError,
  systemClock,
  type AgentSession,
  type Clock,
  type EarlierSession,
  type HumanInput,
  type LlmCallRecord,
  type PlanVersion,
  type SessionRecorder,
  type SnapshotRecord,
  type Step,
  type LoggedCall,
  type ToolCallRecord,
  type ToolCallState,
  type ToolIntent,
  type ToolJournal,
  type ToolListCache,
} from "../core/index.js";
import {
  DROP_FINISHED_INTENTS,
  FOLD_CALL,
  IN_DOUBT_MESSAGE,
  OPEN_INTENTS,
  argsWhole,
  loggedCall,
  resultWhole,
  sentCall,
  type CallDbRow,
  type IntentDbRow,
} from "./intents.js";
import { IntentFiles, intentDir, type JournalLines } from "./intent-file.js";
import { openDatabase, type OpenDbOptions } from "./db.js";
import * as agents from "./agents.js";
import * as batch from "./batch.js";
import { batchRuns, browseSessions, changeMark } from "./browse.js";
import * as read from "./read.js";
import { BUILTIN_RULES, extraRules } from "./redact.js";
import { DEFAULT_LIMITS, Sanitizer, byteLength, collectSecrets, type SanitizeLimits } from "./sanitize.js";
import type {
  BatchItem,
  BatchRun,
  BatchRunSummary,
  BrowseOptions,
  DisplayStatus,
  ListSessionsOptions,
  MemoryHit,
  Reliability,
  SearchOptions,
  SessionListItem,
  SessionPage,
  Timeline,
  ToolCallFilter,
  ToolCallRow,
  ToolStat,
  ToolStatsOptions,
} from "./schemas.js";
import { ownSelf } from "./liveness.js";
import { GroupCommit } from "./group-commit.js";
import { PromptIds, storePrompt } from "./prompts.js";
import { searchMemory } from "./search.js";
import { toolListCache } from "./tool-lists.js";
import { bit, rawStmt, stmt } from "./sql.js";
import { mostAndLeastReliable, toolStats } from "./stats.js";

export interface SessionStoreOptions extends OpenDbOptions {
  /** Values to redact besides secret-looking environment variables. */
  secrets?: string[];
  /** Regular expressions whose matches are redacted besides the built-in rules (profiles.yaml `redact:`). */
  redact?: string[];
  /** Where secret-looking variables are read from (default process.env). */
  env?: NodeJS.ProcessEnv;
  limits?: Partial<SanitizeLimits>;
  clock?: Clock;
  /**
   * Group commit (group-commit.ts): the session writes of this many milliseconds share one transaction, so a
   * crash loses at most that window's writes. For batch runs and queue workers; off (one per write) otherwise.
   */
  groupCommitMs?: number;
}

const UPSERT_SESSION = `
INSERT INTO sessions (id, parent_session_id, agent, original_query, status, status_reason, pending_question,
  final_answer, solution_summary, result_requirement, confidence, original_goal_achieved, llm_calls, input_tokens,
  output_tokens, tokens, tool_calls, duration_ms, created_at, updated_at, finished_at, owner_pid, owner_host,
  owner_started, interrupted_reason, session_json)
VALUES (@id, @parent_session_id, @agent, @original_query, @status, @status_reason, @pending_question,
  @final_answer, @solution_summary, @result_requirement, @confidence, @original_goal_achieved, @llm_calls,
  @input_tokens, @output_tokens, @tokens, @tool_calls, @duration_ms, @created_at, @updated_at, @finished_at,
  @owner_pid, @owner_host, @owner_started, NULL, @session_json)
ON CONFLICT(id) DO UPDATE SET parent_session_id = excluded.parent_session_id, agent = excluded.agent,
  original_query = excluded.original_query, status = excluded.status, status_reason = excluded.status_reason,
  pending_question = excluded.pending_question, final_answer = excluded.final_answer,
  solution_summary = excluded.solution_summary, result_requirement = excluded.result_requirement,
  confidence = excluded.confidence, original_goal_achieved = excluded.original_goal_achieved,
  llm_calls = excluded.llm_calls, input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,
  tokens = excluded.tokens, tool_calls = excluded.tool_calls, duration_ms = excluded.duration_ms,
  updated_at = excluded.updated_at, finished_at = excluded.finished_at, owner_pid = excluded.owner_pid,
  owner_host = excluded.owner_host, owner_started = excluded.owner_started, interrupted_reason = NULL,
  session_json = excluded.session_json`;

// Upserts keep `ord` and `created_at` of the first save, so the timeline shows when a thing first happened.
const UPSERT_SNAPSHOT = `
INSERT INTO snapshots (session_id, idx, snapshot_type, step_index, result_requirement, solution_summary,
  original_goal_achieved, confidence, created_at, ord, record_json)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(session_id, idx) DO UPDATE SET snapshot_type = excluded.snapshot_type,
  step_index = excluded.step_index, result_requirement = excluded.result_requirement,
  solution_summary = excluded.solution_summary, original_goal_achieved = excluded.original_goal_achieved,
  confidence = excluded.confidence, record_json = excluded.record_json`;

const UPSERT_PLAN = `
INSERT INTO plan_versions (session_id, version, reason, triggered_by, plan_text, created_at, ord, record_json)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(session_id, version) DO UPDATE SET reason = excluded.reason, triggered_by = excluded.triggered_by,
  plan_text = excluded.plan_text, record_json = excluded.record_json`;

const UPSERT_STEP = `
INSERT INTO steps (session_id, idx, plan_version, type, description, status, attempts, code, conclusion, question,
  result_ok, result_json, result_bytes, result_truncated, error_code, error_message, created_at, updated_at, ord,
  record_json)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(session_id, idx) DO UPDATE SET plan_version = excluded.plan_version, type = excluded.type,
  description = excluded.description, status = excluded.status, attempts = excluded.attempts, code = excluded.code,
  conclusion = excluded.conclusion, question = excluded.question, result_ok = excluded.result_ok,
  result_json = excluded.result_json, result_bytes = excluded.result_bytes,
  result_truncated = excluded.result_truncated, error_code = excluded.error_code,
  error_message = excluded.error_message, updated_at = excluded.updated_at, record_json = excluded.record_json`;

/**
 * A logged result past this is cut (and so cannot be replayed: the resumed step treats the call as in doubt).
 * Larger than the text cap: replay needs the whole value.
 */
const MAX_RESULT_CHARS = 1_000_000;

/**
 * How long the finished rows of a durable step's live calls may share a transaction (their journal lines keep
 * them through a crash meanwhile): a commit per call was most of what logging a call cost. Readers in other
 * processes see a call's row at most this late; this process's own readers see it at once.
 */
const CALL_WINDOW_MS = 50;

/** Stores with calls' rows waiting: process.exit() and a natural end insert them (as group-commit.ts does). */
const waiting = new Set<SessionStore>();
let exitHook = false;
function onExitFlush(): void {
  if (exitHook) return;
  exitHook = true;
  process.on("exit", () => {
    for (const s of waiting) {
      try {
        s.flush();
      } catch {
        // Exiting: the journal file's lines hold these calls for the next open to fold in.
        s.lineWaiting();
      }
    }
  });
}

const INSERT_TOOL_CALL = `INSERT INTO tool_calls (session_id, step_index, seq, server, tool, ok, error_kind,
  error_message, latency_ms, bytes, started_at, state, args_sha, args_json, result_json, decided_by, ord, clock_json)
  VALUES (@session_id, @step_index, @seq, @server, @tool, @ok, @error_kind, @error_message, @latency_ms, @bytes,
  @started_at, @state, @args_sha, @args_json, @result_json, @decided_by, @ord, @clock_json)`;

/** INSERT_TOOL_CALL for `n` rows in one statement, with positional parameters (cheaper to bind than names). */
function insertToolCalls(n: number): string {
  const row = `(${Array.from({ length: 18 }, () => "?").join(", ")})`;
  return `INSERT INTO tool_calls (session_id, step_index, seq, server, tool, ok, error_kind, error_message,
  latency_ms, bytes, started_at, state, args_sha, args_json, result_json, decided_by, ord, clock_json)
  VALUES ${Array.from({ length: n }, () => row).join(", ")}`;
}
/** The statements' sizes: a run of rows goes in as few statements as these make (at most three kinds cached). */
const INSERT_CHUNKS = [32, 8, 1].map((n) => ({ n, sql: insertToolCalls(n) }));

function isConstraint(e: unknown): boolean {
  return String((e as { code?: string }).code).startsWith("SQLITE_CONSTRAINT");
}

function pushCallParams(out: unknown[], c: CallDbRow): void {
  out.push(
    c.session_id,
    c.step_index,
    c.seq,
    c.server,
    c.tool,
    c.ok,
    c.error_kind,
    c.error_message,
    c.latency_ms,
    c.bytes,
    c.started_at,
    c.state,
    c.args_sha,
    c.args_json,
    c.result_json,
    c.decided_by,
    c.ord,
    c.clock_json,
  );
}

/** A replayed_runs row (migration 16). */
interface ReplayedRun {
  session_id: string;
  step_index: number;
  first_seq: number;
  count: number;
  started_at: string;
  ord: number;
}

const INSERT_REPLAYED_RUN = `INSERT INTO replayed_runs (session_id, step_index, first_seq, count, started_at, ord)
  VALUES (@session_id, @step_index, @first_seq, @count, @started_at, @ord)`;

const INSERT_INTENT = `INSERT INTO tool_intents (session_id, step_index, seq, server, tool, args_sha, args_json,
  started_at, ord, clock_json) VALUES (@session_id, @step_index, @seq, @server, @tool, @args_sha, @args_json,
  @started_at, @ord, @clock_json)`;

/** An intent from a journal file, unless its call has finished or the table has it already. */
const FOLD_INTENT = `INSERT INTO tool_intents (session_id, step_index, seq, server, tool, args_sha, args_json,
  started_at, ord, clock_json) SELECT @session_id, @step_index, @seq, @server, @tool, @args_sha, @args_json,
  @started_at, @ord, @clock_json
  WHERE NOT EXISTS (SELECT 1 FROM tool_intents i WHERE i.session_id = @session_id AND i.step_index = @step_index
    AND i.seq = @seq)
  AND NOT EXISTS (SELECT 1 FROM tool_calls c WHERE c.session_id = @session_id AND c.step_index = @step_index
    AND c.seq = @seq AND c.state != 'replayed')`;

/** Whether `valueJson` is what parsing `raw` gives (JSON.stringify of it), so storing `raw` keeps both. */
function valueOfRaw(raw: string, valueJson: string): boolean {
  if (raw === valueJson) return true;
  try {
    return JSON.stringify(JSON.parse(raw)) === valueJson;
  } catch {
    return false;
  }
}

/** A step's logged call, as LOGGED_CALLS lists it (in its order). */
type LoggedCallTuple = [
  id: number,
  seq: number,
  server: string,
  tool: string,
  args_sha: string | null,
  args_json: string | null,
  state: ToolCallState,
  ok: number,
  error_kind: string | null,
  error_message: string | null,
  result_json: string | null,
  clock_json: string | null,
];
/**
 * A step's log as one JSON array of row arrays, in no set order: a resumed step reads all of it, and one string
 * that JSON.parse takes apart costs ~0.6 × reading the same rows' cells one by one (sorting them, 0.75 ×).
 */
const LOGGED_CALLS = `SELECT json_group_array(json_array(id, seq, server, tool, args_sha, args_json, state, ok,
  error_kind, error_message, result_json, clock_json))
  FROM tool_calls WHERE session_id = ? AND step_index = ? AND seq IS NOT NULL AND state != 'replayed'`;

/**
 * Of two rows for one position, the one a resume replays: an outcome it can hand back (a failure, or a result
 * kept whole) over one whose result was not kept, over one in doubt; among equals the older. A later row wins
 * when a run made the call again or a person decided its outcome.
 */
function outranks(a: LoggedCall, aId: number, b: LoggedCall, bId: number): boolean {
  const ra = rank(a);
  const rb = rank(b);
  return ra !== rb ? ra > rb : aId < bId;
}

function rank(c: LoggedCall): number {
  return c.state !== "done" ? 0 : c.ok && !c.result_whole ? 1 : 2;
}

export class SessionStore implements SessionRecorder, ToolJournal {
  private lastOrd = 0;
  /** Runs a write's body in BEGIN IMMEDIATE … COMMIT; made once, as db.transaction() builds new wrappers per call. */
  private readonly tx: Database.Transaction<(body: () => unknown) => unknown>;
  /**
   * Per running session, the JSON last stored for each of its snapshot, plan and step rows, so finishSession
   * rewrites only the rows that changed since. Dropped when the session finishes or a write of it fails.
   */
  private readonly written = new Map<string, Map<string, string>>();
  /** This process, as the owner its sessions' rows name (liveness.ts tells when it has died). */
  private readonly owner = ownSelf();
  private group?: GroupCommit;
  /**
   * Without group commit: the finished rows of durable-step calls waiting to be inserted together (their lines
   * in the journal file keep them through a crash meanwhile). They wait in memory, not in an open transaction,
   * so the file's write lock is never held while tools run: other `pda` processes on the same database do not
   * queue behind it. Any other write inserts them first, in its own transaction.
   */
  private pendingCalls: CallDbRow[] = [];
  /**
   * By session, the waiting rows (of pendingCalls) that have no line in the journal file yet: a row gets its
   * line in the same write(2) as the session's next intent, before that call leaves, and none at all when its
   * window commits first. So a crash between a call's end and the next write costs that call its outcome:
   * the resume finds it in doubt (sent, no outcome), never lost or made again unasked.
   */
  private unlined = new Map<string, CallDbRow[]>();
  /** Inside batch(): the rows of recordToolCall, inserted together at its end. */
  private batchCalls: CallDbRow[] = [];
  /** Inside batch(): the runs of replayed calls that copy their logged rows (replayed_runs), in order. */
  private replayedRuns: ReplayedRun[] = [];
  /** Runs of replayed calls waiting in the calls' window (replayed()): they need no line, see there. */
  private pendingRuns: ReplayedRun[] = [];
  private callTimer?: NodeJS.Timeout;
  private windowCalls = false;
  private readonly knownSessions = new Set<string>();
  /** Prompt parts' ids by text (prompts.ts); cleared whenever a write or a group's COMMIT fails. */
  private readonly promptIds = new PromptIds();
  /** Inside batch(): each write joins its transaction. */
  private batching = false;
  /** The durable-step intents' journal files (intent-file.ts); none for a store in memory. */
  private intentFiles?: IntentFiles;

  private constructor(
    /** The open connection, for tests and tools that need raw SQL. */
    readonly db: Database.Database,
    readonly path: string,
    private readonly clean: Sanitizer,
    private readonly clock: Clock,
  ) {
    this.tx = db.transaction((body: () => unknown) => body());
  }

  /** Open (creating folders and file if needed) and migrate. Throws StoreError. */
  static open(path: string, options: SessionStoreOptions = {}): SessionStore {
    const db = openDatabase(path, options);
    const secrets = collectSecrets(options.env ?? process.env, options.secrets ?? []);
    const limits = { ...DEFAULT_LIMITS, ...options.limits };
    const rules = [...BUILTIN_RULES, ...extraRules(options.redact ?? [])];
    const store = new SessionStore(
      db,
      path,
      new Sanitizer(secrets, limits, rules),
      options.clock ?? systemClock,
    );
    const dir = intentDir(db.name);
    if (dir) store.intentFiles = new IntentFiles(dir, options.durability === "full");
    const lost = (e: Error) => {
      store.written.clear();
      store.promptIds.clear();
      return new StoreError("STORE_WRITE_FAILED", `committing the session writes failed: ${e.message}`, {
        cause: e,
      });
    };
    if (options.groupCommitMs && options.groupCommitMs > 0)
      store.group = new GroupCommit(db, options.groupCommitMs, lost);
    else if (dir) store.windowCalls = true;
    return store;
  }

  /** A text with every secret this store knows of redacted (for what is written beside it: batch CSVs). */
  redact(text: string): string {
    return this.clean.redact(text);
  }

  close(): void {
    if (!this.db.open) return;
    try {
      this.group?.flush();
      this.flushCalls();
    } catch (e) {
      this.lineWaiting();
      throw e;
    } finally {
      this.intentFiles?.close();
      this.db.close();
    }
  }

  /** Commit the open group-commit window (or durable calls' window) now. */
  flush(): void {
    this.group?.flush();
    this.flushCalls();
  }

  /** Insert the durable calls' rows waiting in memory, in one transaction (any write does it first). */
  private flushCalls(): void {
    if ((this.pendingCalls.length > 0 || this.pendingRuns.length > 0) && this.db.open)
      this.write("recordToolCall", null, () => {});
  }

  /**
   * The waiting rows that have no line yet get theirs now: their window could not commit (another process
   * holds the write lock, the store is closing on an error), and the next intent may be far off.
   */
  lineWaiting(): void {
    const files = this.intentFiles;
    if (!files || this.unlined.size === 0) return;
    for (const [sessionId, rows] of this.unlined) {
      try {
        files.appendResults(sessionId, rows);
        this.unlined.delete(sessionId);
      } catch {
        // Left as they are: a call whose outcome is neither committed nor in its file is in doubt on resume.
      }
    }
  }

  /** Inserts rows of tool_calls in as few statements as the chunk sizes allow. */
  private insertCalls(rows: readonly CallDbRow[], skipConstraint: boolean): void {
    let at = 0;
    for (const { n, sql } of INSERT_CHUNKS) {
      while (rows.length - at >= n) {
        const params: unknown[] = [];
        for (let i = at; i < at + n; i++) pushCallParams(params, rows[i]!);
        try {
          stmt(this.db, sql).run(params);
        } catch (e) {
          // Only this statement is undone. A constraint means a row's session was deleted meanwhile (or the row
          // was folded in from its line already): nothing left to keep of that row; the others go in alone.
          if (!skipConstraint || !isConstraint(e)) throw e;
          if (n > 1)
            for (let i = at; i < at + n; i++) {
              try {
                stmt(this.db, INSERT_TOOL_CALL).run(rows[i]);
              } catch (e1) {
                if (!isConstraint(e1)) throw e1;
              }
            }
        }
        at += n;
      }
    }
  }

  /** Waiting runs of replayed calls; one whose session was deleted meanwhile is dropped, as insertCalls does. */
  private insertRuns(runs: readonly ReplayedRun[]): void {
    for (const run of runs) {
      try {
        stmt(this.db, INSERT_REPLAYED_RUN).run(run);
      } catch (e) {
        if (!isConstraint(e)) throw e;
      }
    }
  }

  /** Whether the session has a row (remembered once seen: a running session's row is not deleted). */
  private sessionExists(id: string): boolean {
    if (this.knownSessions.has(id)) return true;
    if (!stmt(this.db, "SELECT 1 FROM sessions WHERE id = ?").get(id)) return false;
    this.knownSessions.add(id);
    return true;
  }

  /** The waiting rows, handed to the write about to run (undefined when none wait). */
  private takeWaiting(): { calls: CallDbRow[]; runs: ReplayedRun[] } | undefined {
    if (this.pendingCalls.length === 0 && this.pendingRuns.length === 0) return undefined;
    const taken = { calls: this.pendingCalls, runs: this.pendingRuns };
    this.pendingCalls = [];
    this.pendingRuns = [];
    clearTimeout(this.callTimer);
    this.callTimer = undefined;
    waiting.delete(this);
    return taken;
  }

  private queueCall(row: CallDbRow): void {
    this.pendingCalls.push(row);
    const unlined = this.unlined.get(row.session_id);
    if (unlined) unlined.push(row);
    else this.unlined.set(row.session_id, [row]);
    this.armWindow();
  }

  /** The window's commit, due CALL_WINDOW_MS from its first waiting row unless a write takes them first. */
  private armWindow(): void {
    if (this.callTimer) return;
    waiting.add(this);
    onExitFlush();
    // Unref'd: a waiting row does not keep the process alive; the exit hook inserts it.
    this.callTimer = setTimeout(() => {
      try {
        this.flushCalls();
      } catch {
        // Left waiting (write() put them back): the next write, or the exit hook, tries again. Meanwhile their
        // lines keep them through a crash.
        this.lineWaiting();
      }
    }, CALL_WINDOW_MS).unref();
  }

  // ---- SessionRecorder: synchronous, committed on return ----

  startSession(session: AgentSession): void {
    this.write("startSession", session.session_id, () => this.upsertSession(session, null));
  }

  saveSnapshot(sessionId: string, record: SnapshotRecord): void {
    this.write("saveSnapshot", sessionId, () => {
      const { snapshot } = this.upsertSnapshot(sessionId, record);
      stmt(
        this.db,
        "UPDATE sessions SET result_requirement = ?, solution_summary = ?, confidence = ?, updated_at = ? WHERE id = ?",
      ).run(
        snapshot.result_requirement,
        snapshot.solution_summary,
        snapshot.confidence,
        this.clock.iso(),
        sessionId,
      );
    });
  }

  savePlanVersion(sessionId: string, plan: PlanVersion): void {
    this.write("savePlanVersion", sessionId, () => this.upsertPlan(sessionId, plan));
  }

  /** Leaves the session row alone: readers take an unfinished session's last write from its steps too. */
  saveStep(sessionId: string, step: Step): void {
    this.write("saveStep", sessionId, () => this.upsertStep(sessionId, step));
  }

  /**
   * A finished call. A call of a durable step (`seq` set) completes the row its intent inserted, when there is
   * one; replayed calls and calls refused before they were sent get a row of their own. A durable step's live
   * call on a store with journal files is on disk as a line of its session's file on return (as its intent
   * was); its row joins a short window's transaction instead of a commit of its own (CALL_WINDOW_MS).
   */
  recordToolCall(sessionId: string, stepIndex: number | null, r: ToolCallRecord): void {
    if (r.copies_logged && r.state === "replayed" && r.seq !== undefined && stepIndex !== null) {
      this.recordReplayed(sessionId, stepIndex, r.seq, r.started_at);
      return;
    }
    const c = this.clean;
    const durable = r.seq !== undefined && stepIndex !== null && r.state !== "replayed";
    // The intent this store logged for the call holds its arguments redacted already.
    const intent = durable ? this.intentFiles?.intentOf(sessionId, stepIndex, r.seq!) : undefined;
    const cols: CallDbRow = {
      session_id: sessionId,
      step_index: stepIndex,
      seq: r.seq ?? null,
      server: c.text(r.server),
      tool: c.text(r.tool),
      ok: bit(r.ok),
      error_kind: c.optText(r.error_kind),
      error_message: c.optText(r.error_message),
      latency_ms: r.latency_ms,
      bytes: r.bytes,
      started_at: r.started_at,
      state: r.state ?? "done",
      args_sha: r.args_sha ?? null,
      args_json:
        r.args_json === undefined
          ? null
          : intent && intent.args_sha === r.args_sha
            ? intent.args_json
            : c.text(r.args_json),
      result_json: r.result_json === undefined ? null : c.text(r.result_json, MAX_RESULT_CHARS),
      decided_by: r.decided_by ?? null,
      ord: this.nextOrd(),
      clock_json: r.clock_json ?? null,
    };
    // With group commit (a batch, a worker) the row is in the group's window like every other write of its step,
    // and a crash loses the step as a whole: no line, and no commit at the session's end to drop one.
    const files = durable && !this.batching && !this.group ? this.intentFiles : undefined;
    // A session this store has not written goes in at once: a row SQLite refuses (an unknown session) must
    // fail here, and leave no line to fold in later.
    if (files && this.windowCalls && this.sessionExists(sessionId)) this.queueCall(cols);
    else if (this.batching) this.batchCalls.push(cols);
    else this.write("recordToolCall", sessionId, () => stmt(this.db, INSERT_TOOL_CALL).run(cols));
    if (durable) this.intentFiles?.finished(sessionId, stepIndex, r.seq!);
  }

  /**
   * A replayed call that is its logged row over again: one more call of the batch's last run when it follows
   * it (same step and time, the next position, no other row between), else a run of its own.
   */
  private recordReplayed(sessionId: string, stepIndex: number, seq: number, startedAt: string): void {
    const last = this.batching ? this.replayedRuns.at(-1) : undefined;
    if (
      last &&
      last.session_id === sessionId &&
      last.step_index === stepIndex &&
      last.started_at === startedAt &&
      last.first_seq + last.count === seq &&
      last.ord + last.count === this.lastOrd + 1
    ) {
      // Its ord is the run's next, so nothing written later sorts before it.
      this.lastOrd++;
      last.count++;
      return;
    }
    const run: ReplayedRun = {
      session_id: sessionId,
      step_index: stepIndex,
      first_seq: seq,
      count: 1,
      started_at: startedAt,
      ord: this.nextOrd(),
    };
    if (this.batching) this.replayedRuns.push(run);
    else this.write("recordToolCall", sessionId, () => stmt(this.db, INSERT_REPLAYED_RUN).run(run));
  }

  // ---- ToolJournal: the durable-step log ----

  /**
   * As batch(), for the rows of a replayed step's calls (the journal's confirm). Calls that are their logged
   * rows over again (runs) then wait in the calls' window, when the body recorded nothing else and the window is
   * on: they record a replay, nothing that was sent, so they need no commit of their own (a resumed step's
   * only one, ~40 µs of it) and no line; a crash meanwhile loses only that record (the resume replays the calls
   * again). Anything else recorded (a mismatch) commits at once, with them. The body only records calls: it
   * runs in no transaction, so any other write of it would commit on its own.
   */
  replayed<T>(body: () => T): T {
    if (this.batching || !this.windowCalls) return this.batch(body);
    this.batching = true;
    let calls: CallDbRow[];
    let runs: ReplayedRun[];
    let out: T;
    try {
      out = body();
    } finally {
      this.batching = false;
      calls = this.batchCalls;
      runs = this.replayedRuns;
      this.batchCalls = [];
      this.replayedRuns = [];
    }
    if (calls.length > 0)
      this.write("batch", null, () => {
        this.insertCalls(calls, false);
        for (const run of runs) stmt(this.db, INSERT_REPLAYED_RUN).run(run);
      });
    else if (runs.every((r) => this.sessionExists(r.session_id))) {
      this.pendingRuns.push(...runs);
      if (runs.length > 0) this.armWindow();
    } else
      // A session this store has not written: its row must fail here (as recordToolCall's), not in the window.
      this.write("batch", null, () => {
        for (const run of runs) stmt(this.db, INSERT_REPLAYED_RUN).run(run);
      });
    return out;
  }

  /** Runs `body`'s writes in one transaction; the tool_calls rows it records go in together at its end. */
  batch<T>(body: () => T): T {
    if (this.batching) return body();
    let out: T | undefined;
    this.write("batch", null, () => {
      this.batching = true;
      try {
        out = body();
        if (this.batchCalls.length > 0) this.insertCalls(this.batchCalls, false);
        for (const run of this.replayedRuns) stmt(this.db, INSERT_REPLAYED_RUN).run(run);
      } finally {
        this.batching = false;
        this.batchCalls = [];
        this.replayedRuns = [];
      }
    });
    return out as T;
  }

  /**
   * Appended to the session's journal file (intent-file.ts), not committed to SQLite: a commit before every
   * live call costs tens of µs, a write(2) a few, and both survive the process being killed.
   */
  intent(sessionId: string, stepIndex: number, i: ToolIntent): void {
    const row: IntentDbRow = {
      session_id: sessionId,
      step_index: stepIndex,
      seq: i.seq,
      server: this.clean.text(i.server),
      tool: this.clean.text(i.tool),
      args_sha: i.args_sha,
      args_json: this.clean.text(i.args_json),
      started_at: i.started_at,
      ord: this.nextOrd(),
      clock_json: i.clock_json ?? null,
    };
    const files = this.intentFiles;
    if (!files) {
      this.write("intent", sessionId, () => stmt(this.db, INSERT_INTENT).run(row), true);
      return;
    }
    this.appendLine("intent", sessionId, () => {
      // The writes before it commit first: a resume must not find this intent without the calls before it.
      this.group?.flush();
      // Nor without the outcomes of the calls before it: those still waiting for their window go in the same
      // write(2), as lines.
      const before = this.unlined.get(sessionId);
      files.append(row, before);
      if (before) this.unlined.delete(sessionId);
    });
  }

  private appendLine(op: string, sessionId: string, body: () => void): void {
    try {
      body();
    } catch (e) {
      if (e instanceof StoreError) throw e;
      throw new StoreError(
        "STORE_WRITE_FAILED",
        `${op} (session ${sessionId}) failed: ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    }
  }

  stepCalls(sessionId: string, stepIndex: number): LoggedCall[] {
    this.flushCalls();
    const rows = JSON.parse(
      rawStmt<[string]>(this.db, LOGGED_CALLS).get(sessionId, stepIndex)![0],
    ) as LoggedCallTuple[];
    const bySeq = new Map<number, LoggedCall>();
    const ids = new Map<number, number>();
    const firstDone = new Map<number, number>();
    for (const r of rows) {
      const call: LoggedCall = {
        seq: r[1],
        server: r[2],
        tool: r[3],
        args_sha: r[4],
        args_json: r[5],
        args_whole: argsWhole(r[5]),
        state: r[6],
        ok: r[7] === 1,
        error_kind: r[8],
        error_message: r[9],
        result_json: r[10],
        result_whole: resultWhole(r[10]),
        clock_json: r[11],
      };
      const had = bySeq.get(call.seq);
      if (call.state === "done") firstDone.set(call.seq, Math.min(firstDone.get(call.seq) ?? r[0], r[0]));
      if (!had || outranks(call, r[0], had, ids.get(call.seq)!)) {
        bySeq.set(call.seq, call);
        ids.set(call.seq, r[0]);
      }
    }
    for (const [seq, call] of bySeq) if (firstDone.get(seq)! < ids.get(seq)!) call.later = true;
    // This store's own lines need no read: their finished rows are in the table (or its group's window).
    const own = this.intentFiles?.openLines(sessionId);
    const file = own ? { intents: own, results: [] } : this.fileLines(sessionId);
    for (const f of file.results) {
      if (f.step_index !== stepIndex) continue;
      const had = bySeq.get(f.seq!);
      const call = loggedCall(f);
      if (had && rank(call) <= rank(had)) continue;
      if (had?.state === "done") call.later = true;
      bySeq.set(f.seq!, call);
    }
    const open = [
      ...stmt<IntentDbRow>(this.db, OPEN_INTENTS).all(sessionId, stepIndex, stepIndex),
      ...file.intents.filter((i) => i.step_index === stepIndex),
    ];
    for (const i of open) if (!bySeq.has(i.seq)) bySeq.set(i.seq, sentCall(i));
    return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  }

  endStep(sessionId: string, stepIndex: number): void {
    this.foldIntentFile(sessionId);
    // Keeps the table to the steps under way, so the scans of it (no index, on purpose) stay short. Most
    // steps have nothing there (their intents were in the file): a read tells, with no commit.
    if (stmt(this.db, "SELECT 1 FROM tool_intents WHERE session_id = ? LIMIT 1").get(sessionId)) {
      this.write("endStep", sessionId, () =>
        stmt(this.db, DROP_FINISHED_INTENTS).run(sessionId, stepIndex, stepIndex),
      );
    }
  }

  markInDoubt(sessionId: string): number {
    // The dead process's journal file first: its lines are the calls it may have sent, and those it finished.
    const fromFile = this.fileLines(sessionId);
    let n = 0;
    this.write(
      "markInDoubt",
      sessionId,
      () => {
        for (const c of fromFile.results) stmt(this.db, FOLD_CALL).run(c);
        for (const i of fromFile.intents) stmt(this.db, FOLD_INTENT).run(i);
        for (const i of stmt<IntentDbRow>(this.db, OPEN_INTENTS).all(sessionId, null, null)) {
          stmt(this.db, INSERT_TOOL_CALL).run({
            session_id: sessionId,
            step_index: i.step_index,
            seq: i.seq,
            server: i.server,
            tool: i.tool,
            ok: 0,
            error_kind: "IN_DOUBT",
            error_message: IN_DOUBT_MESSAGE,
            latency_ms: 0,
            bytes: 0,
            started_at: i.started_at,
            state: "in_doubt",
            args_sha: i.args_sha,
            args_json: i.args_json,
            result_json: null,
            decided_by: null,
            ord: i.ord,
            clock_json: i.clock_json,
          });
          n++;
        }
        stmt(this.db, "DELETE FROM tool_intents WHERE session_id = ?").run(sessionId);
      },
      true,
    );
    this.intentFiles?.drop(sessionId);
    return n;
  }

  /** The lines of the session's journal file (none for a store in memory). */
  private fileLines(sessionId: string): JournalLines {
    return this.intentFiles?.read(sessionId) ?? { intents: [], results: [] };
  }

  /**
   * Moves the intents of the session's journal file whose call never finished (cut short by a stop) into
   * tool_intents, committed, then empties the file. Usually every call finished and nothing is written.
   */
  private foldIntentFile(sessionId: string): void {
    const files = this.intentFiles;
    if (!files) return;
    const own = files.openLines(sessionId);
    const { intents: open, results } = own ? { intents: own, results: [] } : this.openFileLines(sessionId);
    if (open.length > 0 || results.length > 0)
      this.write("endStep", sessionId, () => {
        for (const c of results) stmt(this.db, FOLD_CALL).run(c);
        for (const i of open) stmt(this.db, FOLD_INTENT).run(i);
      });
    // The finished rows may still be waiting: they commit before the lines that hold them go. With no lines
    // (a step replayed from its log, or that made no call) they wait for their window or the next write.
    if (files.hasLines(sessionId)) {
      this.flushCalls();
      this.group?.flush();
    }
    files.clear(sessionId);
  }

  /** The lines of the session's file (some other process's): its finished rows, and intents with none. */
  private openFileLines(sessionId: string): JournalLines {
    const { intents: lines, results } = this.fileLines(sessionId);
    const finished = new Set<string>(results.map((c) => `${c.step_index}:${c.seq}`));
    for (const step of new Set(lines.map((i) => i.step_index))) {
      for (const { seq } of stmt<{ seq: number }>(
        this.db,
        `SELECT seq FROM tool_calls WHERE session_id = ? AND step_index = ? AND seq IS NOT NULL
          AND state != 'replayed'`,
      ).all(sessionId, step))
        finished.add(`${step}:${seq}`);
    }
    return { intents: lines.filter((i) => !finished.has(`${i.step_index}:${i.seq}`)), results };
  }

  recordLlmCall(sessionId: string, r: LlmCallRecord): void {
    // Redacted and cut first, then split: what is stored once per distinct paragraph is the clean text.
    const prompt = this.clean.text(r.prompt);
    const raw = this.clean.text(r.raw_response);
    const value = this.clean.json(r.value) ?? null;
    this.write("recordLlmCall", sessionId, () =>
      stmt(
        this.db,
        `INSERT INTO llm_calls (session_id, role, provider, model, ok, input_tokens, output_tokens, latency_ms,
          attempts, cost_usd, prompt, prompt_parts, prompt_bytes, raw_response, raw_response_bytes, value_json,
          error, finish_reason, started_at, ord)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        sessionId,
        this.clean.text(r.role),
        this.clean.text(r.provider),
        this.clean.text(r.model),
        bit(r.ok),
        r.input_tokens,
        r.output_tokens,
        r.latency_ms,
        r.attempts,
        r.cost_usd ?? null,
        storePrompt(this.db, prompt, this.promptIds),
        byteLength(r.prompt),
        raw,
        byteLength(r.raw_response),
        // The validated value is what replay plays back, so it is redacted but never cut: "" when it is the
        // stored raw response's JSON (a model answering in JSON mode), which then holds it once.
        value !== null && valueOfRaw(raw, value) ? "" : value,
        this.clean.optText(r.error),
        this.clean.optText(r.finish_reason),
        r.started_at,
        this.nextOrd(),
      ),
    );
  }

  recordHumanInput(sessionId: string, input: HumanInput): void {
    this.write("recordHumanInput", sessionId, () => this.insertHumanInput(sessionId, input), true);
  }

  recordServerLog(sessionId: string | null, entry: ServerLogEntry): void {
    this.write("recordServerLog", sessionId, () =>
      stmt(
        this.db,
        "INSERT INTO server_logs (session_id, server, level, logger, message, at) VALUES (?, ?, ?, ?, ?, ?)",
      ).run(
        sessionId,
        this.clean.text(entry.server),
        entry.level,
        entry.logger ?? null,
        this.clean.text(entry.message),
        entry.at,
      ),
    );
  }

  /** The hub's cache of servers' tool lists (core ToolListCache), in this store. */
  toolLists(): ToolListCache {
    return toolListCache(this.db, () => this.clock.iso());
  }

  /** The log messages servers sent while this session ran, oldest first. */
  serverLogs(sessionId: string): ServerLogEntry[] {
    const rows = stmt<ServerLogEntry & { logger: string | null }>(
      this.db,
      "SELECT server, level, logger, message, at FROM server_logs WHERE session_id = ? ORDER BY id",
    ).all(this.resolveId(sessionId));
    return rows.map((r) => ServerLogEntry.parse({ ...r, logger: r.logger ?? undefined }));
  }

  /**
   * Store the final status, state, usage and JSON. Rows the loop did not save as they happened (a step, a
   * plan's later step list, a human input) are brought in line with the session, so the tables and the JSON
   * agree; rows this store last wrote as they are now are left alone.
   */
  finishSession(session: AgentSession): void {
    const id = session.session_id;
    const fromFile = this.fileLines(id);
    this.write("finishSession", id, () => {
      this.upsertSession(session, this.clock.iso());
      for (const s of session.snapshots) this.upsertSnapshot(id, s, true);
      for (const p of session.plan_versions) this.upsertPlan(id, p, true);
      for (const s of session.steps) this.upsertStep(id, s, true);
      const logged = stmt<{ n: number }>(
        this.db,
        "SELECT count(*) AS n FROM human_inputs WHERE session_id = ?",
      ).get(id)!.n;
      for (const h of session.state.human_inputs.slice(logged)) this.insertHumanInput(id, h);
      // Intents are only needed until their call has a row; one left open is a call still in doubt.
      for (const c of fromFile.results) stmt(this.db, FOLD_CALL).run(c);
      for (const i of fromFile.intents) stmt(this.db, FOLD_INTENT).run(i);
      stmt(this.db, DROP_FINISHED_INTENTS).run(id, null, null);
    });
    this.written.delete(id);
    if (fromFile.intents.length > 0 || fromFile.results.length > 0) this.group?.flush();
    this.intentFiles?.drop(id);
  }

  /** Mark a running session as interrupted (e.g. on Ctrl-C) so readers need not guess from its pid. */
  markInterrupted(sessionId: string, reason: string): void {
    this.write(
      "markInterrupted",
      sessionId,
      () => {
        const r = stmt(
          this.db,
          "UPDATE sessions SET interrupted_reason = ?, updated_at = ? WHERE id = ? AND status = 'running'",
        ).run(this.clean.text(reason), this.clock.iso(), sessionId);
        if (r.changes === 0) read.sessionRow(this.db, sessionId); // throws STORE_NOT_FOUND for an unknown id
      },
      true,
    );
  }

  /**
   * A person says the answers they gave in this session may be reused by memory: until then memory leaves
   * out every session a person answered a question in (pda memory remember).
   */
  rememberHumanAnswers(idOrPrefix: string): string {
    const id = this.resolveId(idOrPrefix);
    this.write(
      "rememberHumanAnswers",
      id,
      () => stmt(this.db, "UPDATE sessions SET remember_human = 1 WHERE id = ?").run(id),
      true,
    );
    return id;
  }

  /**
   * Take over a session whose process died, so no other process continues it too: the row then names this
   * process as its owner. Throws STORE_NOT_INTERRUPTED (with its display status) when it is not interrupted.
   */
  claimInterrupted(idOrPrefix: string): string {
    const id = this.resolveId(idOrPrefix);
    this.write(
      "claimInterrupted",
      id,
      () => {
        const row = read.sessionRow(this.db, id);
        const status = read.displayStatus(row);
        if (status !== "interrupted") {
          const owner = status === "running" ? ` (pid ${row.owner_pid} on ${row.owner_host})` : "";
          throw new StoreError("STORE_NOT_INTERRUPTED", `session ${id} is ${status}${owner}`);
        }
        stmt(
          this.db,
          `UPDATE sessions SET owner_pid = ?, owner_host = ?, owner_started = ?, interrupted_reason = NULL,
           updated_at = ? WHERE id = ?`,
        ).run(this.owner.pid, this.owner.host, this.owner.started, this.clock.iso(), id);
      },
      true,
    );
    return id;
  }

  earlierSession(id: string): EarlierSession | undefined {
    if (!stmt(this.db, "SELECT 1 FROM sessions WHERE id = ?").get(id)) return undefined;
    const status = this.displayStatus(id);
    // Claimed before it is read, so two resumes of its caller cannot both continue it.
    if (status === "interrupted") this.claimInterrupted(id);
    return {
      session: this.getSession(id),
      interrupted: status === "interrupted",
      busy: status === "running",
    };
  }

  /** A session's status as shown to people: "interrupted" for a running one whose process died. */
  displayStatus(idOrPrefix: string): DisplayStatus {
    return read.displayStatus(read.sessionRow(this.db, this.resolveId(idOrPrefix)));
  }

  // ---- reads ----

  /** A session by id or unambiguous id prefix, validated against the AgentSession schema. */
  getSession(idOrPrefix: string): AgentSession {
    this.flushCalls();
    return read.loadSession(this.db, idOrPrefix);
  }

  /** The full id for an id or an unambiguous prefix. */
  resolveId(idOrPrefix: string): string {
    return read.resolveSessionId(this.db, idOrPrefix);
  }

  listSessions(options?: ListSessionsOptions): SessionListItem[] {
    return read.listSessions(this.db, options);
  }

  /** One page of sessions, newest first, filtered; pass the page's `next` as `after` for the following one. */
  browseSessions(options?: BrowseOptions): SessionPage {
    this.flushCalls();
    return browseSessions(this.db, options);
  }

  /**
   * Changes whenever another process commits to the store: a reader checks it (one pragma, no table read)
   * before looking for what changed.
   */
  changeMark(): number {
    this.flushCalls();
    return changeMark(this.db);
  }

  timeline(idOrPrefix: string): Timeline {
    this.flushCalls(); // this process's readers see its calls at once
    return read.timeline(this.db, idOrPrefix);
  }

  llmCalls(idOrPrefix: string): LlmCallRecord[] {
    return read.llmCalls(this.db, idOrPrefix);
  }

  toolCalls(filter?: ToolCallFilter): ToolCallRow[] {
    this.flushCalls();
    return read.toolCalls(this.db, filter);
  }

  searchMemory(text: string, options?: SearchOptions): MemoryHit[] {
    return searchMemory(this.db, text, options, this.clock.now());
  }

  toolStats(options?: ToolStatsOptions): ToolStat[] {
    this.flushCalls();
    return toolStats(this.db, options);
  }

  /** The sessions this session's sub-agents ran (parent_session_id = its id), oldest first. */
  childSessions(idOrPrefix: string): SessionListItem[] {
    return agents.childSessions(this.db, read.resolveSessionId(this.db, idOrPrefix));
  }

  /** Tool statistics per agent (since an ISO time; default all). */
  agentToolStats(since?: string): agents.AgentToolStat[] {
    return agents.agentToolStats(this.db, since);
  }

  mostAndLeastReliable(n: number, options?: { since?: string; minCalls?: number }): Reliability {
    return mostAndLeastReliable(this.db, n, { ...options, nowMs: this.clock.now() });
  }

  // ---- batch runs (generic rows for the batch runner) ----

  startBatchRun(run: { id: string; input_file?: string | null; options?: Record<string, unknown> }): void {
    this.write("startBatchRun", null, () => batch.startRun(this.db, run, this.clean, this.clock.iso()), true);
  }

  /**
   * Commits at once (with the group's open window) unless `durable: false`: a row that may wait for the
   * window, as a batch row marked running before its session's first write, which cannot commit without it.
   */
  saveBatchItem(
    item: Omit<BatchItem, "started_at" | "finished_at"> &
      Partial<Pick<BatchItem, "started_at" | "finished_at">>,
    options: { durable?: boolean } = {},
  ): void {
    const durable = options.durable ?? true;
    this.write("saveBatchItem", null, () => batch.saveItem(this.db, item, this.clean), durable);
  }

  finishBatchRun(runId: string, status: string = "finished"): void {
    this.write("finishBatchRun", null, () => batch.finishRun(this.db, runId, status, this.clock.iso()), true);
  }

  batchRun(runId: string): BatchRun {
    return batch.getRun(this.db, runId);
  }

  /** Batch runs, newest first, with item counts by status. */
  batchRuns(limit?: number): BatchRunSummary[] {
    return batchRuns(this.db, limit);
  }

  batchItems(runId: string): BatchItem[] {
    return batch.items(this.db, runId);
  }

  // ---- internals ----

  /** Write order within this process; the timeline sorts by it (timestamps tie within a millisecond). */
  private nextOrd(): number {
    this.lastOrd = Math.max(this.lastOrd + 1, this.clock.now() * 1000);
    return this.lastOrd;
  }

  /**
   * Run one recorder write as an IMMEDIATE transaction, turning SQLite errors into StoreErrors. Inside a
   * batch() it joins the batch's transaction (no savepoint each: the batch commits or rolls back as one).
   */
  private write(op: string, sessionId: string | null, body: () => unknown, durable = false): void {
    try {
      // With group commit the body runs in a savepoint of the window's transaction: a failing write is
      // undone alone. A durable write commits the window with it.
      this.group?.begin();
      const waiting = this.takeWaiting();
      const run = waiting
        ? () => {
            // The waiting rows first, in this write's transaction: they are older than it.
            this.insertCalls(waiting.calls, true);
            this.insertRuns(waiting.runs);
            return body();
          }
        : body;
      try {
        if (this.batching) run();
        else {
          this.tx.immediate(run);
          // Committed: the waiting rows need no lines now.
          if (waiting) this.unlined.clear();
        }
      } catch (e) {
        // Rolled back with the write: they wait for the next one (their journal lines still hold them).
        if (waiting) {
          this.pendingCalls.unshift(...waiting.calls);
          this.pendingRuns.unshift(...waiting.runs);
        }
        throw e;
      }
      if (durable) this.group?.flush();
    } catch (e) {
      // What the rolled-back body noted as written may not be in the file.
      if (sessionId !== null) this.written.delete(sessionId);
      this.promptIds.clear();
      if (e instanceof StoreError) throw e;
      const code = String((e as { code?: string }).code ?? "");
      const what = sessionId === null ? op : `${op} (session ${sessionId})`;
      if (code === "SQLITE_CONSTRAINT_FOREIGNKEY") {
        throw new StoreError("STORE_UNKNOWN_SESSION", `${what}: no such session or run; start it first`, {
          cause: e,
        });
      }
      throw new StoreError("STORE_WRITE_FAILED", `${what} failed: ${code} ${(e as Error).message}`, {
        cause: e,
      });
    }
  }

  private upsertSession(session: AgentSession, finishedAt: string | null): void {
    const c = this.clean;
    const lastSnapshot = session.snapshots[session.snapshots.length - 1]?.snapshot;
    stmt(this.db, UPSERT_SESSION).run({
      id: session.session_id,
      parent_session_id: session.parent_session_id ?? null,
      agent: c.optText(session.agent),
      original_query: c.text(session.original_query),
      status: session.status,
      status_reason: c.optText(session.status_reason),
      pending_question: c.optText(session.pending_question),
      final_answer: c.optText(session.state.final_answer),
      solution_summary: c.text(session.state.solution_summary),
      result_requirement: c.optText(lastSnapshot?.result_requirement),
      confidence: session.state.confidence,
      original_goal_achieved: bit(session.state.original_goal_achieved),
      llm_calls: session.usage.llm_calls,
      input_tokens: session.usage.input_tokens,
      output_tokens: session.usage.output_tokens,
      tokens: session.usage.tokens,
      tool_calls: session.usage.tool_calls,
      duration_ms: session.usage.ms,
      created_at: session.created_at,
      updated_at: this.clock.iso(),
      finished_at: finishedAt,
      owner_pid: this.owner.pid,
      owner_host: this.owner.host,
      owner_started: this.owner.started,
      // Without the snapshots, plans and steps: each has its own row (written with this one when the session
      // finishes), which loadSession reads; kept here too, they were 1.6 KB of a 12.9 KB batch session.
      session_json: c.sessionJson({ ...session, snapshots: [], plan_versions: [], steps: [] }),
    });
  }

  /**
   * Whether a row needs writing: not when `onlyChanged` and this store last wrote it with this JSON. Notes the
   * JSON as written either way.
   */
  private changed(sessionId: string, key: string, json: string, onlyChanged: boolean): boolean {
    let rows = this.written.get(sessionId);
    if (!rows) this.written.set(sessionId, (rows = new Map()));
    if (onlyChanged && rows.get(key) === json) return false;
    rows.set(key, json);
    return true;
  }

  /** Returns the record as stored (redacted). */
  private upsertSnapshot(sessionId: string, record: SnapshotRecord, onlyChanged = false): SnapshotRecord {
    const { value: r, json } = this.clean.record(record);
    if (!this.changed(sessionId, `snapshot:${r.index}`, json, onlyChanged)) return r;
    stmt(this.db, UPSERT_SNAPSHOT).run(
      sessionId,
      r.index,
      r.snapshot_type,
      r.step_index ?? null,
      r.snapshot.result_requirement,
      r.snapshot.solution_summary,
      bit(r.snapshot.original_goal_achieved),
      r.snapshot.confidence,
      r.created_at,
      this.nextOrd(),
      json,
    );
    return r;
  }

  private upsertPlan(sessionId: string, plan: PlanVersion, onlyChanged = false): void {
    const { value: p, json } = this.clean.record(plan);
    if (!this.changed(sessionId, `plan:${p.version}`, json, onlyChanged)) return;
    stmt(this.db, UPSERT_PLAN).run(
      sessionId,
      p.version,
      p.reason,
      p.triggered_by,
      p.plan_text.join("\n"),
      p.created_at,
      this.nextOrd(),
      json,
    );
  }

  private upsertStep(sessionId: string, step: Step, onlyChanged = false): void {
    const { step: s, json, resultJson, resultBytes, truncated } = this.clean.step(step);
    if (!this.changed(sessionId, `step:${s.index}`, json, onlyChanged)) return;
    const result = s.execution_result;
    const error = s.error ?? result?.error;
    const now = this.clock.iso();
    stmt(this.db, UPSERT_STEP).run(
      sessionId,
      s.index,
      s.plan_version,
      s.type,
      s.description,
      s.status,
      s.attempts,
      s.code ?? null,
      s.conclusion ?? null,
      s.question ?? null,
      result ? bit(result.ok) : null,
      resultJson,
      resultBytes,
      bit(truncated),
      error?.code ?? null,
      error?.message ?? null,
      now,
      now,
      this.nextOrd(),
      json,
    );
  }

  private insertHumanInput(sessionId: string, h: HumanInput): void {
    stmt(
      this.db,
      `INSERT INTO human_inputs (session_id, kind, question, answer, answered_by, at, step_index, ord)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      sessionId,
      this.clean.text(h.kind),
      this.clean.text(h.question),
      this.clean.text(h.answer),
      this.clean.text(h.answered_by),
      h.at,
      h.step_index ?? null,
      this.nextOrd(),
    );
  }
}
