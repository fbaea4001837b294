/**
 * Budgets across an agent team. Each drive of a session opens an account in a ledger the team's loops share;
 * a sub-agent's account sits under its caller's. Before each model call and step the loop asks its account
 * whether it may go on: its own budgets count what it and its sub-agents spent, and every caller's budgets
 * count the same for the caller — so a sub-agent's model calls, tokens and cost are charged to its callers as
 * they happen, a sub-agent started late gets at most what its callers have left, and callers' wall time bounds
 * it.
 */
import type { Budgets } from "../../config/index.js";
import { addSpend, noSpend, type AgentSession, type Spend, type TokenUsage } from "../../core/index.js";
import {
  budgetRules,
  firstStop,
  spendRules,
  type BudgetView,
  type StopReason,
  type StopRule,
} from "./budgets.js";

export class SpendAccount {
  /** Accounts of the sub-agent sessions started under this one, running or ended. */
  readonly children: SpendAccount[] = [];
  /** Model calls under way: counted as spent, so sub-agents running in parallel cannot both take the last one. */
  private inFlight = 0;
  private readonly rules: StopRule[];
  /** What this session's budgets impose on the sub-agents under it. */
  private readonly callerRules: StopRule[];

  constructor(
    readonly session: AgentSession,
    budgets: Budgets,
    private readonly elapsedMs: () => number,
    readonly parent?: SpendAccount,
  ) {
    this.rules = budgetRules(budgets);
    this.callerRules = spendRules(budgets);
  }

  /** This session's own spending, model calls under way included. */
  own(): Spend {
    const u = this.session.usage;
    return { llm_calls: u.llm_calls + this.inFlight, tokens: u.tokens, cost_usd: u.cost_usd };
  }

  /**
   * What its sub-agents spent: those started in this drive from their live accounts, the others (an earlier
   * drive, before a pause or a handoff) from the session's agent_calls.
   */
  sub(): Spend {
    const live = new Set(this.children.map((c) => c.session.session_id));
    let spent = noSpend();
    for (const c of this.session.agent_calls ?? []) if (!live.has(c.session_id)) spent = addSpend(spent, c);
    for (const c of this.children) spent = addSpend(spent, c.total());
    return spent;
  }

  total(): Spend {
    return addSpend(this.own(), this.sub());
  }

  /** Why this session may not go on: a budget of its own, or of any caller, is used up. Null when it may. */
  stop(): StopReason | null {
    const mine = firstStop(this.rules, this.view("this session"));
    if (mine) return mine;
    for (let a = this.parent; a; a = a.parent) {
      const who = a.session.agent ?? "the caller";
      const r = firstStop(a.callerRules, a.view(who));
      if (r)
        return { code: r.code, message: `its caller ${who} (session ${a.session.session_id}) ${r.message}` };
    }
    return null;
  }

  /** Counts a model call as spent while it is under way; call the returned function once its usage is on the session. */
  begin(): () => void {
    this.inFlight += 1;
    let done = false;
    return () => {
      if (!done) this.inFlight -= 1;
      done = true;
    };
  }

  private view(who: string): BudgetView {
    return {
      steps: this.session.steps.length,
      elapsedMs: this.elapsedMs(),
      own: this.own(),
      sub: this.sub(),
      who,
    };
  }
}

/** The accounts of the sessions being driven, by session id; one per team (a plain loop has its own). */
export class SpendLedger {
  private readonly accounts = new Map<string, SpendAccount>();

  /** An account for one drive of `s`, under its caller's when the caller is driven with this ledger. */
  open(s: AgentSession, budgets: Budgets, elapsedMs: () => number): SpendAccount {
    const parent = s.parent_session_id ? this.accounts.get(s.parent_session_id) : undefined;
    const account = new SpendAccount(s, budgets, elapsedMs, parent);
    parent?.children.push(account);
    this.accounts.set(s.session_id, account);
    return account;
  }

  /** What session `id`, started under the caller session `callerId`, spent (also when its run failed). */
  spentUnder(callerId: string, id: string): Spend {
    const child = this.accounts.get(callerId)?.children.find((c) => c.session.session_id === id);
    return child ? child.total() : noSpend();
  }

  /** The drive ended. Its caller keeps counting it (its account stays among the caller's children). */
  close(account: SpendAccount): void {
    if (this.accounts.get(account.session.session_id) === account)
      this.accounts.delete(account.session.session_id);
  }
}

/** Model calls counted in the session's own usage, which its budgets read (the loop's calls and sampling's). */
export function chargeUsage(
  s: AgentSession,
  calls: number,
  usage: TokenUsage,
  costUsd: number | undefined,
): void {
  s.usage.llm_calls += calls;
  s.usage.input_tokens += usage.input_tokens;
  s.usage.output_tokens += usage.output_tokens;
  s.usage.tokens += usage.input_tokens + usage.output_tokens;
  s.usage.cost_usd += costUsd ?? 0;
}
