/**
 * Stop rules as small predicates over what a session has used, composed by the loop. Each returns why the
 * session must stop, or null. Model calls, tokens, cost and time count what the session spent together with its
 * sub-agents (agent/spend.ts keeps the figures); steps are each session's own.
 */
import type { Budgets } from "../../config/index.js";
import type { AgentSession, BudgetCode, Spend } from "../../core/index.js";

export interface StopReason {
  code: BudgetCode;
  message: string;
}

/** What the rules look at: one session's steps and time, and its spending split into its own and its sub-agents'. */
export interface BudgetView {
  steps: number;
  /** Time the session has run in this drive, waits on a person left out (ms). */
  elapsedMs: number;
  own: Spend;
  sub: Spend;
  /** Who `own` is, in a message: "this session", or the caller whose budget ran out. */
  who: string;
}
export type StopRule = (v: BudgetView) => StopReason | null;

/** ": 3 by this session, 5 by its sub-agents" when sub-agents spent some of it. */
function split(v: BudgetView, key: "llm_calls" | "tokens"): string {
  return v.sub[key] > 0 ? `: ${v.own[key]} by ${v.who}, ${v.sub[key]} by its sub-agents` : "";
}

export const stepCountIs =
  (max: number): StopRule =>
  (v) =>
    v.steps >= max ? { code: "BUDGET_STEPS", message: `reached the step budget (${max} steps)` } : null;

export const llmCallsAre =
  (max: number): StopRule =>
  (v) =>
    v.own.llm_calls + v.sub.llm_calls >= max
      ? {
          code: "BUDGET_LLM_CALLS",
          message: `reached the model-call budget (${max} calls)${split(v, "llm_calls")}`,
        }
      : null;

export const tokensAre =
  (max: number): StopRule =>
  (v) =>
    v.own.tokens + v.sub.tokens >= max
      ? { code: "BUDGET_TOKENS", message: `reached the token budget (${max} tokens)${split(v, "tokens")}` }
      : null;

/** Dollars as the budget messages show them: up to six decimals, the price tables' precision. */
const usd = (n: number) => `$${Number(n.toFixed(6))}`;

/** Stops once the money spent reaches `max` dollars, and says who spent it. */
export const costIs =
  (max: number): StopRule =>
  (v) => {
    const spent = v.own.cost_usd + v.sub.cost_usd;
    if (spent < max) return null;
    const by =
      v.sub.cost_usd > 0
        ? `${usd(v.own.cost_usd)} by ${v.who}, ${usd(v.sub.cost_usd)} by its sub-agents`
        : `${usd(spent)} by ${v.who}`;
    return { code: "BUDGET_COST", message: `reached the cost budget (${usd(max)}): ${by}` };
  };

export const wallTimeIs =
  (maxMs: number): StopRule =>
  (v) =>
    v.elapsedMs >= maxMs ? { code: "BUDGET_TIME", message: `reached the time budget (${maxMs} ms)` } : null;

/** The rules of a session's own budgets. */
export function budgetRules(b: Budgets): StopRule[] {
  return [stepCountIs(b.max_steps), ...spendRules(b)];
}

/** The rules a caller's budgets impose on the sub-agents under it: what they spend together, not their steps. */
export function spendRules(b: Budgets): StopRule[] {
  return [
    llmCallsAre(b.max_llm_calls),
    tokensAre(b.max_tokens),
    ...(b.max_cost_usd === undefined ? [] : [costIs(b.max_cost_usd)]),
    wallTimeIs(b.max_wall_ms),
  ];
}

export function firstStop(rules: StopRule[], v: BudgetView): StopReason | null {
  for (const rule of rules) {
    const r = rule(v);
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
