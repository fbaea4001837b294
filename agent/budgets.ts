/**
 * Stop rules as small predicates over the session, composed by the loop. Each returns why the session
 * must stop, or null.
 */
import type { Budgets } from "../config/index.js";
import type { AgentSession } from "../core/index.js";

export interface StopReason {
  code: string;
  message: string;
}
export type StopRule = (session: AgentSession, now: number, startedAt: number) => StopReason | null;

export const stepCountIs =
  (max: number): StopRule =>
  (s) =>
    s.steps.length >= max
      ? { code: "BUDGET_STEPS", message: `reached the step budget (${max} steps)` }
      : null;

export const llmCallsAre =
  (max: number): StopRule =>
  (s) =>
    s.usage.llm_calls >= max
      ? { code: "BUDGET_LLM_CALLS", message: `reached the model-call budget (${max} calls)` }
      : null;

export const tokensAre =
  (max: number): StopRule =>
  (s) =>
    s.usage.tokens >= max
      ? { code: "BUDGET_TOKENS", message: `reached the token budget (${max} tokens)` }
      : null;

export const wallTimeIs =
  (maxMs: number): StopRule =>
  (_s, now, startedAt) =>
    now - startedAt >= maxMs
      ? { code: "BUDGET_TIME", message: `reached the time budget (${maxMs} ms)` }
      : null;

export function budgetRules(b: Budgets): StopRule[] {
  return [
    stepCountIs(b.max_steps),
    llmCallsAre(b.max_llm_calls),
    tokensAre(b.max_tokens),
    wallTimeIs(b.max_wall_ms),
  ];
}

export function firstStop(
  rules: StopRule[],
  s: AgentSession,
  now: number,
  startedAt: number,
): StopReason | null {
  for (const rule of rules) {
    const r = rule(s, now, startedAt);
    if (r) return r;
  }
  return null;
}

/**
 * How many times the plan step `planStep` has been attempted in this session — since the agent holding it took
 * control (a handoff starts the new agent's plan with fresh attempts).
 */
export function attemptsOf(s: AgentSession, planStep: number): number {
  const since = s.control?.at(-1)?.since_step ?? 0;
  return s.steps.filter((st) => st.index >= since && st.plan_step === planStep && st.type === "CODE").length;
}
