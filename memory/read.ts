/**
 * Reading sessions back: one session as an AgentSession (validated), the list, the timeline, the LLM and
 * tool call logs. A session still marked running whose writer process is gone reads as "interrupted".
 */
import type Database from "better-sqlite3";
import {
  AgentSession,
  HumanInput,
  LlmCallRecord,
  PlanVersion,
  SnapshotRecord,
  Step,
  StoreError,
  type Usage,
} from "../core/index.js";
import {
  ListSessionsOptions,
  ToolCallFilter,
  type DisplayStatus,
  type LlmCallSummary,
  type SessionInfo,
  type SessionListItem,
  type Timeline,
  type TimelineEvent,
  type ToolCallRow,
} from "./schemas.js";
import { OPEN_INTENTS, type CallDbRow, type IntentDbRow } from "./intents.js";
import { intentDir, readJournalFile } from "./intent-file.js";
import { ownerGone } from "./liveness.js";
import { promptOf } from "./prompts.js";
import { stmt } from "./sql.js";

export interface SessionRow {
  seq: number;
  id: string;
  parent_session_id: string | null;
  agent: string | null;
  original_query: string;
  status: string;
  status_reason: string | null;
  pending_question: string | null;
  final_answer: string | null;
  solution_summary: string | null;
  result_requirement: string | null;
  confidence: number | null;
  llm_calls: number;
  input_tokens: number;
  output_tokens: number;
  tokens: number;
  tool_calls: number;
  duration_ms: number;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  owner_pid: number | null;
  owner_host: string | null;
  owner_started: string | null;
  remember_human: number;
  interrupted_reason: string | null;
  session_json: string;
}

/** Why a running session is really interrupted, or null if it may still be running. */
export function interruption(row: SessionRow): string | null {
  if (row.status !== "running") return null;
  if (row.interrupted_reason) return row.interrupted_reason;
  return ownerGone(row);
}

export function displayStatus(row: SessionRow): DisplayStatus {
  return interruption(row) === null ? (row.status as DisplayStatus) : "interrupted";
}

/** The full id for an id or an unambiguous prefix of one. */
export function resolveSessionId(db: Database.Database, idOrPrefix: string): string {
  const exact = stmt<{ id: string }>(db, "SELECT id FROM sessions WHERE id = ?").get(idOrPrefix);
  if (exact) return exact.id;
  const matches = stmt<{ id: string }>(db, "SELECT id FROM sessions WHERE id >= ? AND id < ? LIMIT 6")
    .all(idOrPrefix, `${idOrPrefix}\uffff`)
    .map((r) => r.id);
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0 || idOrPrefix === "") {
    throw new StoreError("STORE_NOT_FOUND", `no session with id or id prefix "${idOrPrefix}"`);
  }
  throw new StoreError(
    "STORE_AMBIGUOUS_ID",
    `session id prefix "${idOrPrefix}" matches several sessions (${matches.slice(0, 5).join(", ")}…); give more characters`,
  );
}

export function sessionRow(db: Database.Database, id: string): SessionRow {
  const row = stmt<SessionRow>(db, "SELECT * FROM sessions WHERE id = ?").get(id);
  if (!row) throw new StoreError("STORE_NOT_FOUND", `no session with id "${id}"`);
  return row;
}

function parseRecord<T>(
  schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: Error } },
  json: string,
  where: string,
): T {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (e) {
    throw new StoreError("STORE_CORRUPT", `${where}: stored JSON does not parse: ${(e as Error).message}`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new StoreError(
      "STORE_CORRUPT",
      `${where}: stored record does not match its schema: ${parsed.error.message}`,
    );
  }
  return parsed.data;
}

/** Usage as far as the logged calls tell it, for sessions whose writer did not finish them. */
function loggedUsage(db: Database.Database, row: SessionRow): Usage {
  const llm = stmt<{ n: number; inp: number | null; out: number | null; cost: number | null }>(
    db,
    `SELECT count(*) AS n, sum(input_tokens) AS inp, sum(output_tokens) AS out, sum(cost_usd) AS cost
      FROM llm_calls WHERE session_id = ?`,
  ).get(row.id)!;
  const tools = stmt<{ n: number }>(
    db,
    "SELECT count(*) AS n FROM tool_calls WHERE session_id = ? AND state != 'replayed'",
  ).get(row.id)!;
  const inp = llm.inp ?? 0;
  const out = llm.out ?? 0;
  return {
    llm_calls: llm.n,
    input_tokens: inp,
    output_tokens: out,
    tokens: inp + out,
    tool_calls: tools.n,
    cost_usd: llm.cost ?? 0,
    ms: Math.max(0, Date.parse(lastWriteAt(db, row)) - Date.parse(row.created_at)),
  };
}

// saveStep leaves the session row alone (a page less per write), so an unfinished session was last written at
// the later of its row's updated_at and its steps'.
const LAST_WRITE = `CASE WHEN s.finished_at IS NULL
    THEN max(s.updated_at, coalesce((SELECT max(updated_at) FROM steps WHERE session_id = s.id), ''))
    ELSE s.updated_at END`;

function lastWriteAt(db: Database.Database, row: SessionRow): string {
  return stmt<{ at: string }>(db, `SELECT ${LAST_WRITE} AS at FROM sessions s WHERE s.id = ?`).get(row.id)!
    .at;
}

function snapshotsOf(db: Database.Database, id: string): { ord: number; record: SnapshotRecord }[] {
  return stmt<{ ord: number; record_json: string; idx: number }>(
    db,
    "SELECT ord, idx, record_json FROM snapshots WHERE session_id = ? ORDER BY idx",
  )
    .all(id)
    .map((r) => ({
      ord: r.ord,
      record: parseRecord(SnapshotRecord, r.record_json, `session ${id} snapshot ${r.idx}`),
    }));
}

interface StepRowLite {
  ord: number;
  created_at: string;
  idx: number;
  record_json: string;
  result_bytes: number | null;
  result_truncated: number;
}

function stepsOf(db: Database.Database, id: string): { row: StepRowLite; step: Step }[] {
  return stmt<StepRowLite>(
    db,
    "SELECT ord, created_at, idx, record_json, result_bytes, result_truncated FROM steps WHERE session_id = ? ORDER BY idx",
  )
    .all(id)
    .map((row) => ({ row, step: parseRecord(Step, row.record_json, `session ${id} step ${row.idx}`) }));
}

/** Plan versions; each one's step list also names the steps saved under it since it was written. */
function plansOf(db: Database.Database, id: string, steps: Step[]): { ord: number; plan: PlanVersion }[] {
  return stmt<{ ord: number; version: number; record_json: string }>(
    db,
    "SELECT ord, version, record_json FROM plan_versions WHERE session_id = ? ORDER BY version",
  )
    .all(id)
    .map((r) => {
      const plan = parseRecord(PlanVersion, r.record_json, `session ${id} plan version ${r.version}`);
      const under = steps.filter((s) => s.plan_version === plan.version).map((s) => s.index);
      const all = [...new Set([...plan.steps, ...under])].sort((a, b) => a - b);
      return { ord: r.ord, plan: { ...plan, steps: all } };
    });
}

function humanInputsOf(db: Database.Database, id: string): { ord: number; input: HumanInput }[] {
  return stmt<{
    ord: number;
    kind: string;
    question: string;
    answer: string;
    answered_by: string;
    at: string;
    step_index: number | null;
  }>(
    db,
    "SELECT ord, kind, question, answer, answered_by, at, step_index FROM human_inputs WHERE session_id = ? ORDER BY id",
  )
    .all(id)
    .map((r) => {
      const input: HumanInput = {
        kind: r.kind,
        question: r.question,
        answer: r.answer,
        answered_by: r.answered_by,
        at: r.at,
      };
      if (r.step_index !== null) input.step_index = r.step_index;
      return { ord: r.ord, input };
    });
}

/**
 * The session as an AgentSession: its stored JSON, with its snapshots, plans and steps read from their rows.
 * A finished (or paused) session's JSON holds everything else as it ended; before migration 17 it held the
 * three lists too, which still count where a list has no rows. For a session whose writer has not finished it,
 * the summary, confidence and human inputs come from the rows as well, so every completed step of a crashed
 * run is there.
 */
export function loadSession(db: Database.Database, idOrPrefix: string): AgentSession {
  const row = sessionRow(db, resolveSessionId(db, idOrPrefix));
  const where = `session ${row.id}`;
  const base = JSON.parse(row.session_json) as AgentSession;
  const snapshots = snapshotsOf(db, row.id).map((s) => s.record);
  const steps = stepsOf(db, row.id).map((s) => s.step);
  if (row.finished_at !== null && row.status !== "running") {
    const session: AgentSession = {
      ...base,
      snapshots: snapshots.length > 0 ? snapshots : base.snapshots,
      steps: steps.length > 0 ? steps : base.steps,
      plan_versions: plansOf(db, row.id, steps).map((p) => p.plan),
    };
    if (session.plan_versions.length === 0) session.plan_versions = base.plan_versions;
    return parseRecord(AgentSession, JSON.stringify(session), where);
  }
  const last = snapshots[snapshots.length - 1]?.snapshot;
  const session: AgentSession = {
    ...base,
    snapshots,
    steps,
    plan_versions: plansOf(db, row.id, steps).map((p) => p.plan),
    state: {
      ...base.state,
      solution_summary: last?.solution_summary ?? base.state.solution_summary,
      confidence: last?.confidence ?? base.state.confidence,
      human_inputs: humanInputsOf(db, row.id).map((h) => h.input),
    },
    usage: loggedUsage(db, row),
  };
  const reason = interruption(row);
  if (reason !== null && !session.status_reason) session.status_reason = `interrupted: ${reason}`;
  return parseRecord(AgentSession, JSON.stringify(session), where);
}

export const LIST_COLUMNS = `s.*,
  (SELECT count(*) FROM steps WHERE session_id = s.id) AS step_count,
  CASE WHEN s.finished_at IS NULL THEN (SELECT count(*) FROM llm_calls WHERE session_id = s.id) ELSE s.llm_calls END AS llm_n,
  CASE WHEN s.finished_at IS NULL
    THEN (SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM llm_calls WHERE session_id = s.id)
    ELSE s.tokens END AS tokens_n,
  CASE WHEN s.finished_at IS NULL THEN (SELECT count(*) FROM tool_calls WHERE session_id = s.id AND state != 'replayed') ELSE s.tool_calls END AS tool_n,
  ${LAST_WRITE} AS last_write_at`;

export interface ListRow extends SessionRow {
  step_count: number;
  llm_n: number;
  tokens_n: number;
  tool_n: number;
  last_write_at: string;
}

export function listItem(row: ListRow): SessionListItem {
  const unfinished = row.finished_at === null;
  return {
    session_id: row.id,
    status: displayStatus(row),
    original_query: row.original_query,
    final_answer: row.final_answer,
    status_reason: row.status_reason,
    agent: row.agent,
    parent_session_id: row.parent_session_id,
    created_at: row.created_at,
    updated_at: row.last_write_at,
    finished_at: row.finished_at,
    duration_ms: unfinished
      ? Math.max(0, Date.parse(row.last_write_at) - Date.parse(row.created_at))
      : row.duration_ms,
    steps: row.step_count,
    llm_calls: row.llm_n,
    tokens: row.tokens_n,
    tool_calls: row.tool_n,
  };
}

/** An FTS5 query where every word must appear, as a prefix (for `pda sessions --search`). */
export function allWordsQuery(text: string): string | null {
  const words =
    text
      .normalize("NFKC")
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? [];
  return words.length ? words.map((w) => `"${w}"*`).join(" AND ") : null;
}

export function listSessions(db: Database.Database, options: ListSessionsOptions = {}): SessionListItem[] {
  const opts = ListSessionsOptions.parse(options);
  const where: string[] = [];
  const params: unknown[] = [];
  if (opts.search !== undefined) {
    const match = allWordsQuery(opts.search);
    if (match === null) return [];
    where.push("s.seq IN (SELECT rowid FROM sessions_fts WHERE sessions_fts MATCH ?)");
    params.push(match);
  }
  // "interrupted" is derived from "running" rows, so those are filtered after reading (there are few).
  const derived = opts.status === "interrupted" || opts.status === "running";
  if (opts.status !== undefined) {
    where.push("s.status = ?");
    params.push(derived ? "running" : opts.status);
  }
  const sql =
    `SELECT ${LIST_COLUMNS} FROM sessions s ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ` +
    `ORDER BY s.created_at DESC, s.seq DESC ${derived ? "" : "LIMIT ?"}`;
  const rows = db.prepare<unknown[], ListRow>(sql).all(...params, ...(derived ? [] : [opts.limit]));
  const items = rows.map(listItem);
  return derived ? items.filter((i) => i.status === opts.status).slice(0, opts.limit) : items;
}

export function sessionInfo(db: Database.Database, id: string): SessionInfo {
  const row = db.prepare<unknown[], ListRow>(`SELECT ${LIST_COLUMNS} FROM sessions s WHERE s.id = ?`).get(id);
  if (!row) throw new StoreError("STORE_NOT_FOUND", `no session with id "${id}"`);
  return {
    ...listItem(row),
    pending_question: row.pending_question,
    solution_summary: row.solution_summary,
    result_requirement: row.result_requirement,
    confidence: row.confidence,
    owner_pid: row.owner_pid,
    owner_host: row.owner_host,
    interrupted_reason: interruption(row),
  };
}

/** A tool_calls row as read: the row as written (intents.ts), with its id. */
type ToolCallDbRow = CallDbRow & { id: number };

function openIntentRow(i: IntentDbRow): ToolCallDbRow {
  return {
    ...i,
    id: -i.ord, // not a tool_calls row: an id of its own that no row has
    ok: 0,
    error_kind: null,
    error_message: null,
    latency_ms: 0,
    bytes: 0,
    state: "sent",
    result_json: null,
    decided_by: null,
  };
}

function toolCallRow(r: ToolCallDbRow): ToolCallRow {
  const out: ToolCallRow = {
    id: r.id,
    session_id: r.session_id,
    step_index: r.step_index,
    server: r.server,
    tool: r.tool,
    ok: r.ok === 1,
    latency_ms: r.latency_ms,
    bytes: r.bytes,
    started_at: r.started_at,
  };
  if (r.error_kind !== null) out.error_kind = r.error_kind;
  if (r.error_message !== null) out.error_message = r.error_message;
  if (r.seq !== null) out.seq = r.seq;
  if (r.state !== "done") out.state = r.state;
  for (const k of ["args_sha", "args_json", "result_json", "decided_by"] as const) {
    const v = r[k];
    if (v !== null) out[k] = v;
  }
  return out;
}

export function toolCalls(db: Database.Database, filter: ToolCallFilter = {}): ToolCallRow[] {
  const f = ToolCallFilter.parse(filter);
  const conditions: [string, unknown][] = [];
  if (f.session_id !== undefined) conditions.push(["session_id = ?", resolveSessionId(db, f.session_id)]);
  if (f.server !== undefined) conditions.push(["server = ?", f.server]);
  if (f.tool !== undefined) conditions.push(["tool = ?", f.tool]);
  if (f.ok !== undefined) conditions.push(["ok = ?", f.ok ? 1 : 0]);
  if (f.since !== undefined) conditions.push(["started_at >= ?", f.since]);
  const where = conditions.map(([c]) => c);
  const params = conditions.map(([, p]) => p);
  // The view: replayed calls kept as runs (migration 16) come back as rows, in the order they were made.
  // Prepared once per filter shape: a batch reads each query's calls back for its row. A session's calls are
  // few, and a bound LIMIT made reading them 2-5 × dearer (SQLite's sorter; ~0.2 ms a batch query): the limit
  // is applied here. Across sessions the LIMIT stays in SQL, which keeps the sort to that many rows.
  const bySession = f.session_id !== undefined;
  const sql = `SELECT * FROM tool_calls_all ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY ord${bySession ? "" : " LIMIT ?"}`;
  const out: ToolCallRow[] = [];
  for (const r of stmt<ToolCallDbRow>(db, sql).iterate(...params, ...(bySession ? [] : [f.limit]))) {
    out.push(toolCallRow(r));
    if (out.length >= f.limit) break;
  }
  return out;
}

interface LlmDbRow {
  id: number;
  role: string;
  provider: string;
  model: string;
  ok: number;
  input_tokens: number;
  output_tokens: number;
  latency_ms: number;
  attempts: number;
  cost_usd: number | null;
  prompt: string;
  prompt_parts: string | null;
  prompt_bytes: number;
  raw_response: string;
  raw_response_bytes: number;
  value_json: string | null;
  error: string | null;
  finish_reason: string | null;
  started_at: string;
  ord: number;
}

function llmSummary(r: LlmDbRow): LlmCallSummary {
  const out: LlmCallSummary = {
    role: r.role,
    provider: r.provider,
    model: r.model,
    ok: r.ok === 1,
    input_tokens: r.input_tokens,
    output_tokens: r.output_tokens,
    latency_ms: r.latency_ms,
    attempts: r.attempts,
    started_at: r.started_at,
    prompt_bytes: r.prompt_bytes,
    raw_response_bytes: r.raw_response_bytes,
  };
  if (r.cost_usd !== null) out.cost_usd = r.cost_usd;
  if (r.error !== null) out.error = r.error;
  if (r.finish_reason !== null) out.finish_reason = r.finish_reason;
  return out;
}

/** Every model call of a session in the order it was made (what `pda replay` plays back). */
export function llmCalls(db: Database.Database, idOrPrefix: string): LlmCallRecord[] {
  const id = resolveSessionId(db, idOrPrefix);
  return stmt<LlmDbRow>(db, "SELECT * FROM llm_calls WHERE session_id = ? ORDER BY id")
    .all(id)
    .map((r) => {
      const rec: LlmCallRecord = {
        role: r.role,
        provider: r.provider,
        model: r.model,
        ok: r.ok === 1,
        input_tokens: r.input_tokens,
        output_tokens: r.output_tokens,
        latency_ms: r.latency_ms,
        attempts: r.attempts,
        prompt: promptOf(db, r),
        raw_response: r.raw_response,
        started_at: r.started_at,
      };
      if (r.cost_usd !== null) rec.cost_usd = r.cost_usd;
      // "": the value is the raw response's JSON (recordLlmCall keeps it once).
      if (r.value_json !== null) rec.value = JSON.parse(r.value_json === "" ? r.raw_response : r.value_json);
      if (r.error !== null) rec.error = r.error;
      if (r.finish_reason !== null) rec.finish_reason = r.finish_reason;
      return rec;
    });
}

/** Everything `pda show` prints about one session, in write order. */
export function timeline(db: Database.Database, idOrPrefix: string): Timeline {
  const id = resolveSessionId(db, idOrPrefix);
  const session = sessionInfo(db, id);
  const events: { ord: number; event: TimelineEvent }[] = [];
  for (const s of snapshotsOf(db, id)) {
    events.push({ ord: s.ord, event: { kind: "snapshot", at: s.record.created_at, snapshot: s.record } });
  }
  const stepRows = stepsOf(db, id);
  for (const p of plansOf(
    db,
    id,
    stepRows.map((s) => s.step),
  )) {
    events.push({ ord: p.ord, event: { kind: "plan", at: p.plan.created_at, plan: p.plan } });
  }
  const calls = stmt<ToolCallDbRow>(db, "SELECT * FROM tool_calls_all WHERE session_id = ? ORDER BY ord").all(
    id,
  );
  // Calls sent and not (yet) finished: in flight, or in doubt if their process is gone.
  for (const i of stmt<IntentDbRow>(db, OPEN_INTENTS).all(id, null, null)) calls.push(openIntentRow(i));
  // And those its process appended to its journal file (intent-file.ts) that have no row yet: finished ones
  // (their row waits for its window's commit, or its process died before it), then ones sent.
  const file = readJournalFile(intentDir(db.name), id);
  const rows = new Set(calls.map((c) => c.ord));
  for (const c of file.results) if (!rows.has(c.ord)) calls.push({ ...c, id: -c.ord });
  const logged = new Set(calls.map((c) => `${c.step_index}:${c.seq}`));
  for (const i of file.intents) if (!logged.has(`${i.step_index}:${i.seq}`)) calls.push(openIntentRow(i));
  const stepIndices = new Set(stepRows.map((s) => s.step.index));
  for (const { row, step } of stepRows) {
    events.push({
      ord: row.ord,
      event: {
        kind: "step",
        at: row.created_at,
        step,
        result_bytes: row.result_bytes,
        result_truncated: row.result_truncated === 1,
        tool_calls: calls.filter((c) => c.step_index === step.index).map(toolCallRow),
      },
    });
  }
  for (const c of calls) {
    if (c.step_index === null || !stepIndices.has(c.step_index)) {
      events.push({ ord: c.ord, event: { kind: "tool", at: c.started_at, call: toolCallRow(c) } });
    }
  }
  for (const r of stmt<LlmDbRow>(db, "SELECT * FROM llm_calls WHERE session_id = ? ORDER BY id").all(id)) {
    events.push({ ord: r.ord, event: { kind: "llm", at: r.started_at, call: llmSummary(r) } });
  }
  for (const h of humanInputsOf(db, id)) {
    events.push({ ord: h.ord, event: { kind: "human", at: h.input.at, input: h.input } });
  }
  events.sort((a, b) => a.ord - b.ord);
  const row = sessionRow(db, id);
  const usage: Usage =
    row.finished_at !== null && row.status !== "running"
      ? {
          llm_calls: row.llm_calls,
          input_tokens: row.input_tokens,
          output_tokens: row.output_tokens,
          tokens: row.tokens,
          tool_calls: row.tool_calls,
          ms: row.duration_ms,
          cost_usd: costOf(row.session_json),
        }
      : loggedUsage(db, row);
  return { session, usage, events: events.map((e) => e.event) };
}

/** Money spent, from the session JSON written when it ended (0 for sessions logged before costs were kept). */
function costOf(sessionJson: string): number {
  try {
    const cost = (JSON.parse(sessionJson) as { usage?: { cost_usd?: unknown } }).usage?.cost_usd;
    return typeof cost === "number" ? cost : 0;
  } catch {
    return 0;
  }
}
