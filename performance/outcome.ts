/** One query's outcome from its session, the tool calls the store logged for it, and the correctness check. */
import { errorMessage, type AgentSession } from "../core/index.js";
import type { ToolCallRow } from "../memory/index.js";
import type { Verdict } from "./correct.js";
import { ItemOutcome, type QueryItem, type RowStatus } from "./schemas.js";

export interface OutcomeInput {
  item: QueryItem;
  sessionId: string;
  /** null when the loop threw before it could return a session. */
  session: AgentSession | null;
  error?: unknown;
  timedOut: boolean;
  toolCalls: ToolCallRow[];
  verdict: Verdict | null;
  rateLimited: number;
  durationMs: number;
  finishedAt: string;
}

export function rowStatus(session: AgentSession | null, timedOut: boolean): RowStatus {
  if (timedOut) return "timeout";
  return session ? session.status : "error";
}

export function buildOutcome(x: OutcomeInput): ItemOutcome {
  const s = x.session;
  const status = rowStatus(s, x.timedOut);
  const reason = x.timedOut
    ? `timed out (${s?.status_reason ?? "cancelled"})`
    : (s?.status_reason ?? (x.error === undefined ? null : errorMessage(x.error)));
  // Only an answer the session reached by itself can be correct; a partial answer never is.
  const correct = x.item.expected === null ? null : status === "succeeded" && (x.verdict?.correct ?? false);
  return ItemOutcome.parse({
    key: x.item.key,
    index: x.item.index,
    query: x.item.query,
    tools_needed: x.item.tools_needed,
    complexity: x.item.complexity,
    expected: x.item.expected,
    extra: x.item.extra,
    status,
    status_reason: reason,
    session_id: x.sessionId,
    final_plan: s?.plan_versions.at(-1)?.plan_text.join("\n") ?? "",
    output: s?.state.final_answer ?? "",
    // A replayed call did not reach its server: it is the logged call again, not a second invocation.
    tools: x.toolCalls
      .filter((c) => c.state !== "replayed")
      .map((c) => ({
        server: c.server,
        tool: c.tool,
        ok: c.ok,
        error_kind: c.ok ? null : (c.error_kind ?? "unknown"),
        latency_ms: c.latency_ms,
      })),
    correct,
    correct_by: x.item.expected === null ? null : (x.verdict?.by ?? null),
    judge_reason: x.verdict?.reason ?? null,
    steps: s?.steps.length ?? 0,
    plan_versions: s?.plan_versions.length ?? 0,
    llm_calls: s?.usage.llm_calls ?? 0,
    tokens: s?.usage.tokens ?? 0,
    duration_ms: s?.usage.ms ?? x.durationMs,
    human_inputs: s?.state.human_inputs.length ?? 0,
    subagent_calls: s?.agent_calls?.length ?? 0,
    rate_limited: x.rateLimited,
    finished_at: x.finishedAt,
  });
}
