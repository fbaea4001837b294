/**
 * The durable-step intents (migration 14): a row per live call, written before it is sent. One with no
 * finished tool_calls row is a call in flight, or in doubt once its process is gone.
 */
import type { LoggedCall } from "../core/index.js";

/** A session's open intents, of one step or (step NULL) of all. */
/** Drops a session's intents (of one step, or all) whose call has its finished row. */
export const DROP_FINISHED_INTENTS = `DELETE FROM tool_intents WHERE session_id = ? AND (? IS NULL OR step_index = ?)
  AND EXISTS (SELECT 1 FROM tool_calls c WHERE c.session_id = tool_intents.session_id
    AND c.step_index = tool_intents.step_index AND c.seq = tool_intents.seq AND c.state != 'replayed')`;

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
    state: "sent",
    ok: false,
    error_kind: null,
    error_message: null,
    result_json: null,
  };
}
