/** Reading an AgentSession: its current plan and its summary. */
import { SessionSummary, totalSpend, type AgentSession, type PlanVersion } from "../../core/index.js";

export function currentPlan(session: AgentSession): PlanVersion | undefined {
  return session.plan_versions.at(-1);
}

export function summarize(session: AgentSession): SessionSummary {
  const calls = session.agent_calls?.length ?? 0;
  const total = totalSpend(session);
  return SessionSummary.parse({
    session_id: session.session_id,
    status: session.status,
    final_answer: session.state.final_answer,
    steps: session.steps.length,
    plan_versions: session.plan_versions.length,
    llm_calls: session.usage.llm_calls,
    tool_calls: session.usage.tool_calls,
    tokens: session.usage.tokens,
    cost_usd: Number(session.usage.cost_usd.toFixed(6)),
    duration_ms: session.usage.ms,
    human_inputs: session.state.human_inputs.length,
    status_reason: session.status_reason,
    question: session.pending_question,
    with_subagents: calls
      ? { subagent_calls: calls, ...total, cost_usd: Number(total.cost_usd.toFixed(6)) }
      : undefined,
  });
}
