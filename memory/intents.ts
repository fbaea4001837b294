/**
 * The durable-step intents (migration 14): a row per live call, written before it is sent. One with no
 * finished tool_calls row is a call in flight, or in doubt once its process is gone.
 */
import type { LoggedCall, ToolCallState } from "../core/index.js";
import { maybeSanitized } from "./sanitize.js";

/** Drops a session's intents (of one step, or all) whose call has its finished row. */
export const DROP_FINISHED_INTENTS = `DELETE FROM tool_intents WHERE session_id = ? AND (? IS NULL OR step_index = ?)
  AND EXISTS (SELECT 1 FROM tool_calls c WHERE c.session_id = tool_intents.session_id
    AND c.step_index = tool_intents.step_index AND c.seq = tool_intents.seq AND c.state != 'replayed')`;

/** A session's open intents, of one step or (step NULL) of all. */
export const OPEN_INTENTS = `SELECT i.* FROM tool_intents i WHERE i.session_id = ? AND (? IS NULL OR i.step_index = ?)
  AND NOT EXISTS (SELECT 1 FROM tool_calls c WHERE c.session_id = i.session_id AND c.step_index = i.step_index
    AND c.seq = i.seq AND c.state != 'replayed')`;

/** A tool_intents row. */
export interface IntentDbRow {
  session_id: string;
  step_index: number;
  seq: number;
  server: string;
  tool: string;
  args_sha: string;
  args_json: string;
  started_at: string;
  ord: number;
  clock_json: string | null;
}

/**
 * A finished call's tool_calls row as written (the insert's parameters), also the shape of its line in the
 * session's journal file: the line makes it survive the process before the row's transaction commits.
 */
export interface CallDbRow {
  session_id: string;
  step_index: number | null;
  seq: number | null;
  server: string;
  tool: string;
  ok: number;
  error_kind: string | null;
  error_message: string | null;
  latency_ms: number;
  bytes: number;
  started_at: string;
  state: ToolCallState;
  args_sha: string | null;
  args_json: string | null;
  result_json: string | null;
  decided_by: string | null;
  ord: number;
  clock_json: string | null;
}

/** Whether a logged call's arguments are their text whole (LoggedCall.args_whole). */
export function argsWhole(argsJson: string | null): boolean {
  return argsJson !== null && !maybeSanitized(argsJson);
}

/**
 * Whether a logged call's result is its value's JSON whole (LoggedCall.result_whole). A result that holds a
 * marker as the tool wrote it answers no as well: its call is then treated as one whose result was not kept.
 */
export function resultWhole(resultJson: string | null): boolean {
  return resultJson !== null && !maybeSanitized(resultJson);
}

/** A finished row from a journal file, unless the table has it (the same write: its `ord`). */
export const FOLD_CALL = `INSERT INTO tool_calls (session_id, step_index, seq, server, tool, ok, error_kind,
  error_message, latency_ms, bytes, started_at, state, args_sha, args_json, result_json, decided_by, ord,
  clock_json)
  SELECT @session_id, @step_index, @seq, @server, @tool, @ok, @error_kind, @error_message, @latency_ms, @bytes,
  @started_at, @state, @args_sha, @args_json, @result_json, @decided_by, @ord, @clock_json
  WHERE NOT EXISTS (SELECT 1 FROM tool_calls c WHERE c.session_id = @session_id AND c.step_index = @step_index
    AND c.seq = @seq AND c.state != 'replayed' AND c.ord = @ord)`;

/** A finished row as a resumed step sees it. */
export function loggedCall(c: CallDbRow): LoggedCall {
  return {
    seq: c.seq!,
    server: c.server,
    tool: c.tool,
    args_sha: c.args_sha,
    args_json: c.args_json,
    args_whole: argsWhole(c.args_json),
    state: c.state,
    ok: c.ok === 1,
    error_kind: c.error_kind,
    error_message: c.error_message,
    result_json: c.result_json,
    result_whole: resultWhole(c.result_json),
    clock_json: c.clock_json,
  };
}

export const IN_DOUBT_MESSAGE =
  "sent by a process that ended before the call did: it may or may not have happened";

/** An open intent as the log shows it: sent, no outcome. */
export function sentCall(i: IntentDbRow): LoggedCall {
  return {
    seq: i.seq,
    server: i.server,
    tool: i.tool,
    args_sha: i.args_sha,
    args_json: i.args_json,
    args_whole: argsWhole(i.args_json),
    state: "sent",
    ok: false,
    error_kind: null,
    error_message: null,
    result_json: null,
    result_whole: false,
    clock_json: i.clock_json,
  };
}
