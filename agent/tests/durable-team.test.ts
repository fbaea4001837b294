/**
 * Durable steps that call sub-agents: a resumed step finds the sub-agent session its earlier run started (its
 * id comes from the step and the call's order) and does not start the sub-agent again. A real stdio server
 * that writes down every call it receives (the ledger server), a real SQLite store, an agent team whose
 * cashier charges. The kill -9 case (a sub-agent left running by a dead process, resumed) is in
 * tests/e2e/durable-team.test.ts.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Profile } from "../../config/index.js";
import { PolicyChannel, ScriptedChannel, type HumanChannel } from "../../hil/index.js";
import { ScriptedTransport, StructuredProvider, type Script } from "../../llm/index.js";
import type { InterruptSource, LoopEvent } from "../kernel/index.js";
import { AgentTeam, parseAgentsConfig } from "../team/index.js";
import { achieved, code, snap } from "./harness.js";
import { openShop, type Shop } from "./ledger.js";
import { subCode } from "./team.js";

let shop: Shop;

beforeAll(async () => {
  // Each call takes a while, so a sub-agent is still charging when its caller's approval is asked.
  shop = await openShop("pda-durable-team-", { delayMs: 60, needsApproval: ["set"] });
});
afterAll(() => shop.close());
beforeEach(() => shop.clear());

const TEAM = `
agents:
  boss:
    description: Runs the shop.
    tools: [shop.set]
    subagents: [cashier]
  cashier:
    description: Charges an item.
    tools: [shop.charge]
`;
// The cashier notes the charge itself, and noting needs a person's approval.
const TEAM_NOTING = TEAM.replace("tools: [shop.charge]", "tools: [shop.charge, shop.set]");
const PLAN = ["Step 0: have the cashier charge, then note it"];
const CASHIER = subCode(`const c = await charge({ id: 1, amount: 5 });
  await agent.report({ success: true, error_code: "NONE", reason: "charged", result: c });`);

/** The boss's loop over a scripted model (roles per agent: "cashier.decision"), the store as its journal. */
function boss(human: HumanChannel, script: Script, events: LoopEvent[] = [], team_ = TEAM) {
  const model = new StructuredProvider(new ScriptedTransport(script));
  const team = new AgentTeam({ config: parseAgentsConfig("agents.yaml", team_, shop.dir) });
  return team.loop("boss", {
    models: { perception: model, decision: model },
    host: shop.hub,
    recorder: shop.store,
    journal: shop.store,
    human,
    profile: Profile.parse({ budgets: { max_attempts_per_step: 1 } }),
    onEvent: (e) => events.push(e),
  });
}

const received = () => shop.received().map((r) => r.tool);

const children = (parent: string) =>
  shop.store.listSessions({ limit: 50 }).filter((s) => s.parent_session_id === parent);

describe("a step that called a sub-agent, paused by an approval after it", () => {
  const STEP = `const r = await agents.cashier({ task: "charge item 1" });
    const s = await set({ key: "paid", value: r.result.amount });
    return [r.success, r.result.receipt, s.value];`;

  it("hands the sub-agent's report back on resume: it is not started again, and nothing is charged twice", async () => {
    const paused = await boss(new PolicyChannel("defer"), {
      perception: [snap()],
      decision: [code(PLAN, 0, STEP)],
      "cashier.perception": [snap()],
      "cashier.decision": [CASHIER],
    }).run("charge item 1 and note it");
    expect(paused.status).toBe("awaiting_human");
    expect(received()).toEqual(["charge"]);
    const [child] = children(paused.session_id);
    expect(child).toMatchObject({ agent: "cashier", status: "succeeded" });

    // The resume's script has no cashier turns: a cashier started again would end without a report.
    const events: LoopEvent[] = [];
    const done = await boss(
      new ScriptedChannel({ approval: [{ choice: "allow_once" }] }),
      { perception: [achieved("charged and noted")] },
      events,
    ).resume(shop.store.getSession(paused.session_id));
    expect(done.status).toBe("succeeded");
    expect(done.steps[0]!.execution_result).toMatchObject({ ok: true, value: [true, "r-1", 5] });
    expect(received()).toEqual(["charge", "set"]);
    expect(children(paused.session_id).map((c) => c.session_id)).toEqual([child!.session_id]);
    // The trace says the report was replayed, and no sub-agent started.
    expect(events.filter((e) => e.type.startsWith("agent_"))).toEqual([
      expect.objectContaining({ type: "agent_end", session_id: child!.session_id, replayed: true }),
    ]);
    // One call in the caller's log, as the first run logged it.
    expect(done.agent_calls).toEqual([
      expect.objectContaining({ agent: "cashier", session_id: child!.session_id, success: true }),
    ]);
  });

  it("a sub-agent still running when the approval pauses the step finishes first, and its report replays", async () => {
    const PARALLEL = `const [r, s] = await Promise.all([
        agents.cashier({ task: "charge item 1" }),
        set({ key: "paid", value: 5 }),
      ]);
      return [r.success, r.result.receipt, s.value];`;
    const paused = await boss(new PolicyChannel("defer"), {
      perception: [snap()],
      decision: [code(PLAN, 0, PARALLEL)],
      "cashier.perception": [snap()],
      "cashier.decision": [CASHIER],
    }).run("charge item 1 and note it, together");
    expect(paused.status).toBe("awaiting_human");
    // The pause waited for the cashier (its charge takes 60 ms; the approval was deferred at once).
    expect(children(paused.session_id)).toEqual([
      expect.objectContaining({ agent: "cashier", status: "succeeded" }),
    ]);
    const done = await boss(new ScriptedChannel({ approval: [{ choice: "allow_once" }] }), {
      perception: [achieved("done")],
    }).resume(shop.store.getSession(paused.session_id));
    expect(done.steps[0]!.execution_result).toMatchObject({ ok: true, value: [true, "r-1", 5] });
    expect(received()).toEqual(["charge", "set"]);
  });

  it("agents.send that timed out throws AGENT_TIMEOUT again on resume, and the cancelled sub-agent stays ended", async () => {
    const SEND = `let r;
      try { r = await agents.send("cashier", "charge item 1", { timeout_ms: 30 }); } catch (e) { r = e.code; }
      const s = await set({ key: "paid", value: 1 });
      return [r, s.value];`;
    const paused = await boss(new PolicyChannel("defer"), {
      perception: [snap()],
      decision: [code(PLAN, 0, SEND)],
      "cashier.perception": [snap()],
      "cashier.decision": [CASHIER],
    }).run("charge item 1 in time, then note it");
    expect(paused.status).toBe("awaiting_human");
    const [child] = children(paused.session_id);
    expect(child).toMatchObject({ agent: "cashier", status: "aborted" });
    // The cashier may or may not have sent its charge in 30 ms; it is not sent again either way.
    const charged = received().length;
    expect(charged).toBeLessThanOrEqual(1);
    const done = await boss(new ScriptedChannel({ approval: [{ choice: "allow_once" }] }), {
      perception: [achieved("done")],
    }).resume(shop.store.getSession(paused.session_id));
    expect(done.steps[0]!.execution_result).toMatchObject({ ok: true, value: ["AGENT_TIMEOUT", 1] });
    expect(received()).toEqual([...Array<string>(charged).fill("charge"), "set"]);
    expect(children(paused.session_id)).toHaveLength(1);
    expect(done.agent_calls).toEqual([
      expect.objectContaining({ session_id: child!.session_id, timed_out: true }),
    ]);
  });

  it("a resumed step whose sub-agent call is not the one logged at its place fails with REPLAY_MISMATCH", async () => {
    // The code catches what the call throws: the step fails all the same, and sends nothing more.
    const CATCHING = `let r;
      try { r = await agents.cashier({ task: "charge item 1" }); } catch (e) { r = { success: false, result: { amount: 0 } }; }
      const s = await set({ key: "paid", value: r.result.amount });
      return [r.success, s.value];`;
    const paused = await boss(new PolicyChannel("defer"), {
      perception: [snap()],
      decision: [code(PLAN, 0, CATCHING)],
      "cashier.perception": [snap()],
      "cashier.decision": [CASHIER],
    }).run("charge item 1 and note it (changed)");
    const [child] = children(paused.session_id);
    // As if the step's earlier run had given the cashier another task at this place.
    shop.store.db
      .prepare(
        `UPDATE sessions SET original_query = 'charge item 2',
         session_json = json_set(session_json, '$.original_query', 'charge item 2') WHERE id = ?`,
      )
      .run(child!.session_id);
    const done = await boss(new ScriptedChannel({ approval: [{ choice: "allow_once" }] }), {
      perception: [snap({ local_reasoning: "the step failed" })],
    }).resume(shop.store.getSession(paused.session_id));
    expect(done.steps[0]!.execution_result).toMatchObject({
      ok: false,
      error: { code: "REPLAY_MISMATCH" },
    });
    expect(done.steps[0]!.execution_result!.error!.message).toMatch(
      /sub-agent call .* was cashier with "charge item 2" before the restart, but now the code calls cashier with "charge item 1"/,
    );
    // Nothing past it was sent: not the cashier again, not the set.
    expect(received()).toEqual(["charge"]);
  });
});

describe("a question inside a sub-agent", () => {
  const STEP = `const r = await agents.cashier({ task: "charge item 1 and note it" });
    return r.result;`;
  const NOTING = subCode(`const c = await charge({ id: 1, amount: 5 });
    await set({ key: "paid", value: c.amount });
    await agent.report({ success: true, error_code: "NONE", reason: "charged and noted", result: c.receipt });`);

  it("pauses its caller on the same question; resuming the caller resumes the sub-agent, which asks it", async () => {
    const paused = await boss(
      new PolicyChannel("defer"),
      {
        perception: [snap()],
        decision: [code(PLAN, 0, STEP)],
        "cashier.perception": [snap()],
        "cashier.decision": [NOTING],
      },
      [],
      TEAM_NOTING,
    ).run("charge item 1, and have it noted");
    const [child] = children(paused.session_id);
    expect(child).toMatchObject({ agent: "cashier", status: "awaiting_human" });
    // The caller waits on the sub-agent's question, not on an UNKNOWN report it went on with.
    expect(paused.status).toBe("awaiting_human");
    expect(paused.pending_human).toMatchObject({ kind: "approval", tool: "set" });
    expect(paused.pending_question).toBe('allow shop.set({"key":"paid","value":5})?');
    expect(paused.waiting_on).toEqual({ agent: "cashier", session_id: child!.session_id, step_index: 0 });
    expect(paused.steps[0]).toMatchObject({ status: "pending" });
    expect(paused.agent_calls ?? []).toEqual([]);
    expect(received()).toEqual(["charge"]);

    const done = await boss(
      new ScriptedChannel({ approval: [{ choice: "allow_once" }] }),
      { perception: [achieved("charged and noted")] },
      [],
      TEAM_NOTING,
    ).resume(shop.store.getSession(paused.session_id));
    expect(done.status).toBe("succeeded");
    expect(done.waiting_on).toBeUndefined();
    expect(done.steps[0]!.execution_result).toMatchObject({ ok: true, value: "r-1" });
    // The cashier went on from its pause: the charge replayed, the approved set made once.
    expect(received()).toEqual(["charge", "set"]);
    expect(children(paused.session_id)).toEqual([
      expect.objectContaining({ session_id: child!.session_id, status: "succeeded" }),
    ]);
    expect(shop.store.getSession(child!.session_id).state.human_inputs.map((h) => h.answered_by)).toEqual([
      "policy:defer",
      "scripted",
    ]);
    // Its calls: the charge and the set; the replayed charge is that charge again, not another call.
    expect(done.agent_calls).toEqual([
      expect.objectContaining({
        agent: "cashier",
        session_id: child!.session_id,
        success: true,
        tool_calls_used: 2,
      }),
    ]);
  });
});

describe("Ctrl-C while a sub-agent charges, then go on", () => {
  it("the sub-agent, paused by it, is resumed rather than started again: nothing is charged twice", async () => {
    const listeners = new Set<() => void>();
    const keys: InterruptSource = { subscribe: (l) => (listeners.add(l), () => listeners.delete(l)) };
    // Go on, for the boss and (when the sub-agent is resumed) for the cashier; the charge cut short happened.
    const human = new ScriptedChannel({
      interrupt: [{ choice: "continue" }, { choice: "continue" }],
      in_doubt: [{ choice: "give_result", value: { receipt: "r-1", amount: 5 } }],
    });
    const model = new StructuredProvider(
      new ScriptedTransport({
        perception: [snap(), achieved("charged")],
        decision: [
          code(PLAN, 0, `const r = await agents.cashier({ task: "charge item 1" }); return r.result;`),
        ],
        "cashier.perception": [snap()],
        "cashier.decision": [CASHIER],
      }),
    );
    const team = new AgentTeam({ config: parseAgentsConfig("agents.yaml", TEAM, shop.dir) });
    const loop = team.loop("boss", {
      models: { perception: model, decision: model },
      host: shop.hub,
      recorder: shop.store,
      journal: shop.store,
      human,
      interrupts: keys,
      profile: Profile.parse({}),
    });
    // Ctrl-C as soon as the server has the charge (it answers 60 ms later).
    const press = setInterval(() => {
      if (received().length === 0) return;
      clearInterval(press);
      for (const l of [...listeners]) l();
    }, 2);
    const s = await loop
      .run("charge item 1, with a Ctrl-C in the middle")
      .finally(() => clearInterval(press));
    expect(s.status).toBe("succeeded");
    expect(s.state.human_inputs).toEqual([
      expect.objectContaining({ kind: "interrupt", answer: "continue" }),
    ]);
    expect(received()).toEqual(["charge"]);
    expect(children(s.session_id)).toEqual([expect.objectContaining({ agent: "cashier" })]);
  });
});
