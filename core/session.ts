/** A new AgentSession: nothing perceived, planned or spent yet. */
import { SESSION_SCHEMA_VERSION, type AgentSession } from "./schemas.js";

export function newSession(
  query: string,
  id: string,
  at: string,
  extra?: Partial<AgentSession>,
): AgentSession {
  return {
    $schemaVersion: SESSION_SCHEMA_VERSION,
    session_id: id,
    original_query: query,
    created_at: at,
    snapshots: [],
    plan_versions: [],
    steps: [],
    state: {
      original_goal_achieved: false,
      final_answer: null,
      confidence: 0,
      solution_summary: "not ready yet",
      human_inputs: [],
    },
    usage: { llm_calls: 0, input_tokens: 0, output_tokens: 0, tokens: 0, tool_calls: 0, ms: 0, cost_usd: 0 },
    status: "running",
    ...extra,
  };
}
