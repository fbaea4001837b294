/** The spend ledger on its own: what a sub-agent's account reports after its drive, whatever became of it. */
import { describe, expect, it } from "vitest";
import { Budgets } from "../../config/index.js";
import { newSession } from "../../core/index.js";
import { SpendLedger } from "../kernel/index.js";

describe("the spend ledger", () => {
  it("tells what a sub-agent spent after its drive ended, also when no session came back from it", () => {
    const ledger = new SpendLedger();
    const at = "2026-01-01T00:00:00.000Z";
    const boss = newSession("q", "boss-1", at);
    const bossAccount = ledger.open(boss, Budgets.parse({}), () => 0);
    const sub = newSession("sub task", "sub-1", at, { parent_session_id: "boss-1" });
    const subAccount = ledger.open(sub, Budgets.parse({}), () => 0);
    sub.usage = { ...sub.usage, llm_calls: 2, tokens: 300, cost_usd: 0.25 };
    ledger.close(subAccount);
    expect(ledger.spentUnder("boss-1", "sub-1")).toEqual({ llm_calls: 2, tokens: 300, cost_usd: 0.25 });
    expect(bossAccount.sub()).toEqual({ llm_calls: 2, tokens: 300, cost_usd: 0.25 });
    expect(ledger.spentUnder("boss-1", "never-started")).toEqual({ llm_calls: 0, tokens: 0, cost_usd: 0 });
  });
});
