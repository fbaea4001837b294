/**
 * The store's schema as numbered migrations, applied in order on open. `PRAGMA user_version` holds the number
 * of the last one applied. Never edit a migration that has shipped: add the next one (tests open a fixture
 * written by migration 1 and check it upgrades).
 */
import type Database from "better-sqlite3";
import { StoreError } from "../core/index.js";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "session log",
    sql: `
CREATE TABLE sessions (
  seq INTEGER PRIMARY KEY,                -- stable rowid for the FTS index (VACUUM keeps it)
  id TEXT NOT NULL UNIQUE,
  parent_session_id TEXT,
  agent TEXT,
  original_query TEXT NOT NULL,
  status TEXT NOT NULL,
  status_reason TEXT,
  pending_question TEXT,
  final_answer TEXT,
  solution_summary TEXT,
  result_requirement TEXT,
  confidence REAL,
  original_goal_achieved INTEGER NOT NULL DEFAULT 0,
  llm_calls INTEGER NOT NULL DEFAULT 0,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  tokens INTEGER NOT NULL DEFAULT 0,
  tool_calls INTEGER NOT NULL DEFAULT 0,
  duration_ms REAL NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  finished_at TEXT,                       -- set by finishSession; NULL while the loop is writing
  owner_pid INTEGER,
  owner_host TEXT,
  interrupted_reason TEXT,
  session_json TEXT NOT NULL              -- the full AgentSession as of start or finish
);
CREATE INDEX sessions_created ON sessions(created_at);
CREATE INDEX sessions_status_created ON sessions(status, created_at);

CREATE TABLE snapshots (
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  snapshot_type TEXT NOT NULL,
  step_index INTEGER,
  result_requirement TEXT,
  solution_summary TEXT,
  original_goal_achieved INTEGER NOT NULL,
  confidence REAL,
  created_at TEXT NOT NULL,
  ord INTEGER NOT NULL,
  record_json TEXT NOT NULL,
  PRIMARY KEY (session_id, idx)
);

CREATE TABLE plan_versions (
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  version INTEGER NOT NULL,
  reason TEXT NOT NULL,
  triggered_by TEXT NOT NULL,
  plan_text TEXT NOT NULL,
  created_at TEXT NOT NULL,
  ord INTEGER NOT NULL,
  record_json TEXT NOT NULL,
  PRIMARY KEY (session_id, version)
);

CREATE TABLE steps (
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  plan_version INTEGER NOT NULL,
  type TEXT NOT NULL,
  description TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  code TEXT,
  conclusion TEXT,
  question TEXT,
  result_ok INTEGER,
  result_json TEXT,
  result_bytes INTEGER,                   -- size of the full result before any truncation
  result_truncated INTEGER NOT NULL DEFAULT 0,
  error_code TEXT,
  error_message TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  ord INTEGER NOT NULL,                   -- write order of the first save, for the timeline
  record_json TEXT NOT NULL,
  PRIMARY KEY (session_id, idx)
);

CREATE TABLE tool_calls (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  step_index INTEGER,
  server TEXT NOT NULL,
  tool TEXT NOT NULL,
  ok INTEGER NOT NULL,
  error_kind TEXT,
  error_message TEXT,
  latency_ms REAL NOT NULL,
  bytes INTEGER NOT NULL,
  started_at TEXT NOT NULL,
  ord INTEGER NOT NULL
);
CREATE INDEX tool_calls_session ON tool_calls(session_id, id);
CREATE INDEX tool_calls_tool_time ON tool_calls(server, tool, started_at);
CREATE INDEX tool_calls_time ON tool_calls(started_at);

CREATE TABLE llm_calls (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  role TEXT NOT NULL,
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  ok INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  latency_ms REAL NOT NULL,
  attempts INTEGER NOT NULL,
  prompt TEXT NOT NULL,
  prompt_bytes INTEGER NOT NULL,
  raw_response TEXT NOT NULL,
  raw_response_bytes INTEGER NOT NULL,
  value_json TEXT,
  error TEXT,
  started_at TEXT NOT NULL,
  ord INTEGER NOT NULL
);
CREATE INDEX llm_calls_session ON llm_calls(session_id, id);

CREATE TABLE human_inputs (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  question TEXT NOT NULL,
  answer TEXT NOT NULL,
  answered_by TEXT NOT NULL,
  at TEXT NOT NULL,
  step_index INTEGER,
  ord INTEGER NOT NULL
);
CREATE INDEX human_inputs_session ON human_inputs(session_id, id);
`,
  },
  {
    version: 2,
    name: "memory search index",
    // External-content FTS5 over the sessions table, kept in step by triggers; the vocab table gives
    // document frequencies for weighting query terms.
    sql: `
CREATE VIRTUAL TABLE sessions_fts USING fts5(
  original_query, result_requirement, solution_summary, final_answer,
  content='sessions', content_rowid='seq',
  tokenize='porter unicode61 remove_diacritics 2'
);
INSERT INTO sessions_fts(sessions_fts, rank) VALUES ('rank', 'bm25(4.0, 2.0, 1.0, 1.0)');
CREATE VIRTUAL TABLE sessions_fts_vocab USING fts5vocab(sessions_fts, 'row');
CREATE TRIGGER sessions_fts_ai AFTER INSERT ON sessions BEGIN
  INSERT INTO sessions_fts(rowid, original_query, result_requirement, solution_summary, final_answer)
  VALUES (new.seq, new.original_query, new.result_requirement, new.solution_summary, new.final_answer);
END;
CREATE TRIGGER sessions_fts_ad AFTER DELETE ON sessions BEGIN
  INSERT INTO sessions_fts(sessions_fts, rowid, original_query, result_requirement, solution_summary, final_answer)
  VALUES ('delete', old.seq, old.original_query, old.result_requirement, old.solution_summary, old.final_answer);
END;
CREATE TRIGGER sessions_fts_au AFTER UPDATE OF original_query, result_requirement, solution_summary, final_answer
ON sessions BEGIN
  INSERT INTO sessions_fts(sessions_fts, rowid, original_query, result_requirement, solution_summary, final_answer)
  VALUES ('delete', old.seq, old.original_query, old.result_requirement, old.solution_summary, old.final_answer);
  INSERT INTO sessions_fts(rowid, original_query, result_requirement, solution_summary, final_answer)
  VALUES (new.seq, new.original_query, new.result_requirement, new.solution_summary, new.final_answer);
END;
INSERT INTO sessions_fts(sessions_fts) VALUES ('rebuild');
`,
  },
  {
    version: 3,
    name: "batch runs",
    sql: `
CREATE TABLE batch_runs (
  id TEXT PRIMARY KEY,
  input_file TEXT,
  options_json TEXT NOT NULL DEFAULT '{}',
  status TEXT NOT NULL DEFAULT 'running',
  started_at TEXT NOT NULL,
  finished_at TEXT
);
CREATE INDEX batch_runs_started ON batch_runs(started_at);

CREATE TABLE batch_items (
  run_id TEXT NOT NULL REFERENCES batch_runs(id) ON DELETE CASCADE,
  item_key TEXT NOT NULL,
  query TEXT NOT NULL,
  status TEXT NOT NULL,
  session_id TEXT,
  output_json TEXT,
  started_at TEXT,
  finished_at TEXT,
  PRIMARY KEY (run_id, item_key)
);
CREATE INDEX batch_items_session ON batch_items(session_id);
`,
  },
  {
    version: 4,
    name: "sub-agent sessions by parent",
    sql: `CREATE INDEX sessions_parent ON sessions(parent_session_id) WHERE parent_session_id IS NOT NULL;`,
  },
  {
    version: 5,
    name: "server log messages",
    sql: `
CREATE TABLE server_logs (
  id INTEGER PRIMARY KEY,
  session_id TEXT REFERENCES sessions(id) ON DELETE CASCADE,  -- NULL when no single session was running
  server TEXT NOT NULL,
  level TEXT NOT NULL,
  logger TEXT,
  message TEXT NOT NULL,
  at TEXT NOT NULL
);
CREATE INDEX server_logs_session ON server_logs(session_id, id);`,
  },
  {
    version: 6,
    name: "memory search index skips unchanged text",
    // The recorder sets the indexed columns on every snapshot, mostly to what they were; re-indexing them
    // then cost more than the rest of the write.
    sql: `
DROP TRIGGER sessions_fts_au;
CREATE TRIGGER sessions_fts_au AFTER UPDATE OF original_query, result_requirement, solution_summary, final_answer
ON sessions
WHEN old.original_query IS NOT new.original_query OR old.result_requirement IS NOT new.result_requirement
  OR old.solution_summary IS NOT new.solution_summary OR old.final_answer IS NOT new.final_answer
BEGIN
  INSERT INTO sessions_fts(sessions_fts, rowid, original_query, result_requirement, solution_summary, final_answer)
  VALUES ('delete', old.seq, old.original_query, old.result_requirement, old.solution_summary, old.final_answer);
  INSERT INTO sessions_fts(rowid, original_query, result_requirement, solution_summary, final_answer)
  VALUES (new.seq, new.original_query, new.result_requirement, new.solution_summary, new.final_answer);
END;`,
  },
  {
    version: 7,
    name: "cost of each model call",
    // NULL for calls logged before costs were kept, and for models without a price.
    sql: `ALTER TABLE llm_calls ADD COLUMN cost_usd REAL;`,
  },
  {
    version: 8,
    name: "cached tool lists of MCP servers",
    // key: a hash of what defines the server (mcp_servers/hub/cache-key.ts); one row per definition.
    sql: `
CREATE TABLE tool_lists (
  key TEXT PRIMARY KEY,
  server TEXT NOT NULL,
  server_name TEXT,
  server_version TEXT,
  tools_json TEXT NOT NULL,
  updated_at TEXT NOT NULL
);`,
  },
  {
    version: 9,
    name: "session liveness and remembered human answers",
    // owner_started: when the owning process started (Linux: its start time in clock ticks since boot, from
    // /proc/<pid>/stat), so a pid reused by another process does not keep a dead session "running".
    // remember_human: a person said this session's answers may be reused by memory (pda memory remember).
    sql: `
ALTER TABLE sessions ADD COLUMN owner_started TEXT;
ALTER TABLE sessions ADD COLUMN remember_human INTEGER NOT NULL DEFAULT 0;`,
  },
  {
    version: 10,
    name: "prompt text stored once per distinct paragraph",
    // A prompt is mostly paragraphs every call repeats (instructions, rules, tool list): each distinct one is
    // kept once, keyed by its sha256 (memory/prompts.ts); llm_calls.prompt_parts lists a call's part ids as a
    // JSON array and its prompt is then ''. Rows logged before this keep their text in prompt (prompt_parts NULL).
    sql: `
CREATE TABLE prompt_texts (
  id INTEGER PRIMARY KEY,
  sha256 BLOB NOT NULL UNIQUE,
  text TEXT NOT NULL
);
ALTER TABLE llm_calls ADD COLUMN prompt_parts TEXT;`,
  },
  {
    version: 11,
    name: "durable CODE steps: each tool call logged before it is sent, with its arguments and result",
    // A call is inserted as 'sent' before it leaves (its intent) and completed in place when it ends; a
    // resumed step replays the logged calls by (step_index, seq). Rows logged before this are 'done', no seq.
    sql: `
ALTER TABLE tool_calls ADD COLUMN seq INTEGER;
ALTER TABLE tool_calls ADD COLUMN state TEXT NOT NULL DEFAULT 'done';
ALTER TABLE tool_calls ADD COLUMN args_sha TEXT;
ALTER TABLE tool_calls ADD COLUMN args_json TEXT;
ALTER TABLE tool_calls ADD COLUMN result_json TEXT;
ALTER TABLE tool_calls ADD COLUMN decided_by TEXT;
CREATE INDEX tool_calls_step ON tool_calls(session_id, step_index, seq) WHERE seq IS NOT NULL;
CREATE INDEX tool_calls_sent ON tool_calls(session_id) WHERE state = 'sent';`,
  },
  {
    version: 12,
    name: "why the model stopped, per model call",
    // The provider's finish reason verbatim (STOP, MAX_TOKENS, length, ...): `pda show` and the exported
    // chat span's gen_ai.response.finish_reasons read it. NULL for calls logged before, or with no answer.
    sql: `ALTER TABLE llm_calls ADD COLUMN finish_reason TEXT;`,
  },
  {
    version: 13,
    name: "the protocol era of each cached MCP server",
    // era: 'legacy' (2025 initialize) or 'modern' (2026-07-28+), so a server set to `protocol: auto` is not
    // probed at every start; discover_json: a modern server's server/discover result (a connect without a
    // round trip). NULL for lists cached before, which connect as their config says.
    sql: `
ALTER TABLE tool_lists ADD COLUMN era TEXT;
ALTER TABLE tool_lists ADD COLUMN discover_json TEXT;`,
  },
  {
    version: 14,
    name: "durable CODE steps: a call's intent in a table of its own",
    // The intent is written before every live call, so it must be cheap: a row appended to a table with no
    // index is one page in the WAL, where a tool_calls row touched six b-trees and its completion as many
    // again. The finished call is one tool_calls row, as before durable steps. An intent with no finished
    // row is a call in flight (or in doubt once its process is gone); a finished session drops the rest.
    sql: `
CREATE TABLE tool_intents (
  session_id TEXT NOT NULL,
  step_index INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  server TEXT NOT NULL,
  tool TEXT NOT NULL,
  args_sha TEXT NOT NULL,
  args_json TEXT NOT NULL,
  started_at TEXT NOT NULL,
  ord INTEGER NOT NULL DEFAULT 0
);
INSERT INTO tool_intents (session_id, step_index, seq, server, tool, args_sha, args_json, started_at, ord)
  SELECT session_id, step_index, seq, server, tool, coalesce(args_sha, ''), coalesce(args_json, 'null'), started_at, ord
  FROM tool_calls WHERE state = 'sent' AND step_index IS NOT NULL AND seq IS NOT NULL;
DELETE FROM tool_calls WHERE state = 'sent';
DROP INDEX tool_calls_sent;`,
  },
  {
    version: 15,
    name: "durable CODE steps: the step index leaves out replayed calls",
    // Every resume of a step adds a replayed row per call it replays, and the reads by step (a resume's log, an
    // intent's finished row) skip those rows: with them in the index, each resume of a step read all of its
    // earlier resumes' rows too. Replayed rows are found through tool_calls_session, as every row is.
    sql: `
DROP INDEX tool_calls_step;
CREATE INDEX tool_calls_step ON tool_calls(session_id, step_index, seq)
  WHERE seq IS NOT NULL AND state != 'replayed';`,
  },
  {
    version: 16,
    name: "durable CODE steps: replayed calls as runs that point at their logged rows",
    // A resumed step's calls that the log answered as they were logged (same tool, arguments, outcome) were a
    // copy of their logged row each: ~30 µs of a replay's ~100 per call went to writing those copies and their
    // four index entries. A run of them is one row now, which names the logged rows by position; the view
    // tool_calls_all gives each back as the row it stood for, so readers see what they saw before. Replayed
    // rows that differ from the log (a mismatch, a call decided on in doubt) are still tool_calls rows.
    sql: `
CREATE TABLE replayed_runs (
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  step_index INTEGER NOT NULL,
  first_seq INTEGER NOT NULL,
  count INTEGER NOT NULL,
  started_at TEXT NOT NULL,
  ord INTEGER NOT NULL                    -- the first call's; the run's calls have ord, ord + 1, ...
);
CREATE INDEX replayed_runs_session ON replayed_runs(session_id);
CREATE INDEX replayed_runs_time ON replayed_runs(started_at);
CREATE VIEW tool_calls_all AS
SELECT id, session_id, step_index, server, tool, ok, error_kind, error_message, latency_ms, bytes, started_at,
  ord, seq, state, args_sha, args_json, result_json, decided_by
FROM tool_calls
UNION ALL
SELECT -(r.ord + c.seq - r.first_seq), c.session_id, c.step_index, c.server, c.tool, c.ok, c.error_kind,
  c.error_message, 0, 0, r.started_at, r.ord + c.seq - r.first_seq, c.seq, 'replayed', c.args_sha, c.args_json,
  c.result_json, NULL
FROM replayed_runs r JOIN tool_calls c ON c.session_id = r.session_id AND c.step_index = r.step_index
  AND c.seq >= r.first_seq AND c.seq < r.first_seq + r.count AND c.state != 'replayed' AND c.state = 'done'
  -- the call's first finished row, as a resume's log (SessionStore.stepCalls) takes it
  AND c.id = (SELECT min(d.id) FROM tool_calls d WHERE d.session_id = c.session_id
    AND d.step_index = c.step_index AND d.seq = c.seq AND d.state != 'replayed' AND d.state = 'done');`,
  },
  {
    version: 17,
    name: "a session's snapshots, plans and steps in their rows only; a model call's value once",
    // No table changes. From here sessions.session_json leaves out the three lists (their rows hold them, see
    // read.ts loadSession) and llm_calls.value_json is "" when the value is what parsing raw_response gives.
    // A pda from before would read such a finished session as having no steps and fail on the "": the version
    // makes it refuse the file instead (STORE_NEWER_SCHEMA). Rows written before stay as they are.
    sql: "",
  },
  {
    version: 18,
    name: "durable CODE steps: the clock readings a step's code took before each call",
    // A replayed step's code must read the same times to make the same calls (a timestamp in an argument): the
    // readings it took before a call are logged with that call (its intent, then its row) and handed back in
    // order (StepReplay.clock). A JSON array; NULL where the code read no clock, and for rows logged before.
    sql: `
ALTER TABLE tool_calls ADD COLUMN clock_json TEXT;
ALTER TABLE tool_intents ADD COLUMN clock_json TEXT;`,
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/**
 * Bring the database to SCHEMA_VERSION. Runs inside BEGIN IMMEDIATE and re-reads user_version there, so two
 * processes opening a fresh file at once apply each migration exactly once.
 */
export function migrate(db: Database.Database, path: string, target: number = SCHEMA_VERSION): void {
  const current = () => db.pragma("user_version", { simple: true }) as number;
  checkNotNewer(current(), path);
  if (current() >= target) return;
  db.transaction(() => {
    const from = current();
    checkNotNewer(from, path);
    for (const m of MIGRATIONS) {
      if (m.version <= from || m.version > target) continue;
      try {
        db.exec(m.sql);
      } catch (e) {
        throw new StoreError(
          "STORE_MIGRATION_FAILED",
          `${path}: migration ${m.version} (${m.name}) failed: ${(e as Error).message}`,
          { cause: e },
        );
      }
      db.pragma(`user_version = ${m.version}`);
    }
  }).immediate();
}

function checkNotNewer(version: number, path: string): void {
  if (version > SCHEMA_VERSION) {
    throw new StoreError(
      "STORE_NEWER_SCHEMA",
      `${path} has schema version ${version}, newer than this pda understands (${SCHEMA_VERSION}); ` +
        `upgrade pda or point --db / PDA_DB at another file`,
    );
  }
}
