/**
 * What a session spent on models, alone and with its sub-agents. Each session keeps its own usage; what its
 * sub-agents spent is rolled up in its agent_calls (each call's figures are that sub-agent's, its own sub-agents
 * included).
 */
import type { AgentSession } from "./schemas.js";

/** What a session spends on models: calls, tokens, money. */
export interface Spend {
  llm_calls: number;
  tokens: number;
  cost_usd: number;
}

export const noSpend = (): Spend => ({ llm_calls: 0, tokens: 0, cost_usd: 0 });

export function addSpend(a: Spend, b: Partial<Spend>): Spend {
  return {
    llm_calls: a.llm_calls + (b.llm_calls ?? 0),
    tokens: a.tokens + (b.tokens ?? 0),
    cost_usd: a.cost_usd + (b.cost_usd ?? 0),
  };
}

/** What a session spent with every sub-agent under it, as far as their calls have ended. */
export function totalSpend(s: Pick<AgentSession, "usage" | "agent_calls">): Spend {
  const { llm_calls, tokens, cost_usd } = s.usage;
  return (s.agent_calls ?? []).reduce(addSpend, { llm_calls, tokens, cost_usd });
}
