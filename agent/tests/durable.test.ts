/**
 * Durable CODE steps in one process (the kill -9 test is tests/e2e/durable.test.ts): an approval that pauses a
 * step and a resume that replays it, grants and denials that hold across the pause, calls left in doubt and
 * who decides them, a step that leaves its logged path, and the seeded Math.random / Date that keep a replay
 * on the same path. A real stdio server (the ledger server writes down every call it receives) and a real
 * SQLite store.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Profile } from "../../config/index.js";
import type { AgentSession } from "../../core/index.js";
import { PolicyChannel, ScriptedChannel, type HumanChannel, type ScriptFile } from "../../hil/index.js";
import { ScriptedTransport, StructuredProvider } from "../../llm/index.js";
import type { MultiMCP } from "../../mcp_servers/index.js";
import type { SessionStore } from "../../memory/index.js";
import { AgentLoop } from "../kernel/index.js";
import { achieved, code, snap } from "./harness.js";
import { openShop, type Shop } from "./ledger.js";

let shop: Shop;
let hub: MultiMCP;
let store: SessionStore;

beforeAll(async () => {
  shop = await openShop("pda-durable-", { delayMs: 0, needsApproval: ["set", "lookup"] });
  ({ hub, store } = shop);
});
afterAll(() => shop.close());
beforeEach(() => shop.clear());

const PLAN = ["Step 0: charge and set"];
const answers = (script: ScriptFile) => new ScriptedChannel(script);

function loop(human: HumanChannel | undefined, perception: unknown[], decision: unknown[]) {
  const model = new StructuredProvider(new ScriptedTransport({ perception, decision } as never));
  return new AgentLoop({
    models: { perception: model, decision: model },
    host: hub,
    recorder: store,
    journal: store,
    profile: Profile.parse({ budgets: { max_attempts_per_step: 1 } }),
    ...(human && { human }),
  });
}

const received = () => shop.received();

const calls = (id: string) =>
  store.db
    .prepare(
      // The view: replayed calls that copy their logged rows are kept as runs pointing at them (migration 16).
      "SELECT tool, seq, state, ok, error_kind, decided_by FROM tool_calls_all WHERE session_id = ? ORDER BY ord",
    )
    .all(id);

/** A session the process died in the middle of: what the store holds, status running. */
function interrupted(id: string): AgentSession {
  return { ...store.getSession(id), status: "running" };
}

describe("an approval inside a step", () => {
  const STEP = `
    const a = await charge({ id: 1, amount: 5 });
    const s = await set({ key: "k", value: 1 });
    const t = await set({ key: "k", value: 2 });
    return [a.receipt, s.value, t.value];`;

  it("pauses the session (policy:defer); resume asks again, replays what the step had done, and finishes", async () => {
    const paused = await loop(new PolicyChannel("defer"), [snap()], [code(PLAN, 0, STEP)]).run("charge, set");
    expect(paused.status).toBe("awaiting_human");
    expect(paused.pending_human).toMatchObject({ kind: "approval", tool: "set", step_index: 0 });
    expect(paused.steps[0]).toMatchObject({ status: "pending" });
    expect(paused.steps[0]!.execution_result).toBeUndefined();
    expect(received().map((r) => r.tool)).toEqual(["charge"]);

    const human = answers({ approval: [{ choice: "allow_always" }] });
    const done = await loop(human, [achieved("done")], []).resume(store.getSession(paused.session_id));
    expect(done.status).toBe("succeeded");
    expect(done.steps[0]!.execution_result).toMatchObject({ ok: true, value: ["r-1", 1, 2] });
    // The charge was not made again; the grant "for the session" covered the second set.
    expect(received().map((r) => r.tool)).toEqual(["charge", "set", "set"]);
    expect(human.unconsumed()).toEqual([]);
    expect(done.approved_tools).toEqual(["shop.set"]);
    // The replayed charge is not counted as another call.
    expect(done.usage.tool_calls).toBe(3);
    expect(calls(paused.session_id)).toEqual([
      { tool: "charge", seq: 0, state: "done", ok: 1, error_kind: null, decided_by: null },
      { tool: "charge", seq: 0, state: "replayed", ok: 1, error_kind: null, decided_by: null },
      { tool: "set", seq: 1, state: "done", ok: 1, error_kind: null, decided_by: null },
      { tool: "set", seq: 2, state: "done", ok: 1, error_kind: null, decided_by: null },
    ]);
  });

  it("a grant for the session holds after the pause", async () => {
    const step = `
      const a = await set({ key: "a", value: 1 });
      const l = await lookup({ id: 3 });
      const b = await set({ key: "b", value: 2 });
      return [a.value, l.value, b.value];`;
    const first = await loop(
      answers({ approval: [{ choice: "allow_always" }, { choice: "defer" }] }),
      [snap()],
      [code(PLAN, 0, step)],
    ).run("set, look, set");
    expect(first.status).toBe("awaiting_human");
    expect(first.pending_human).toMatchObject({ kind: "approval", tool: "lookup" });
    const human = answers({ approval: [{ choice: "allow_once" }] });
    const done = await loop(human, [achieved("done")], []).resume(store.getSession(first.session_id));
    expect(done.steps[0]!.execution_result).toMatchObject({ ok: true, value: [1, 21, 2] });
    // Asked once on resume (the lookup): the first set was replayed, the second was granted for the session.
    expect(human.unconsumed()).toEqual([]);
    expect(done.state.human_inputs.map((i) => i.answer)).toEqual([
      "allow_always",
      expect.stringMatching(/^defer/),
      "allow_once",
    ]);
    expect(received().map((r) => r.key ?? r.tool)).toEqual(["a", "lookup", "b"]);
  });

  it("a denied call stays denied when the step is replayed, and is not asked about again", async () => {
    const step = `
      let first;
      try { first = (await set({ key: "a", value: 1 })).value; } catch (e) { first = e.code; }
      const second = await set({ key: "b", value: 2 });
      return [first, second.value];`;
    const paused = await loop(
      answers({ approval: [{ choice: "deny" }, { choice: "defer" }] }),
      [snap()],
      [code(PLAN, 0, step)],
    ).run("deny, then pause");
    expect(paused.status).toBe("awaiting_human");
    const human = answers({ approval: [{ choice: "allow_once" }] });
    const done = await loop(human, [achieved("done")], []).resume(store.getSession(paused.session_id));
    expect(done.steps[0]!.execution_result).toMatchObject({ ok: true, value: ["TOOL_DENIED", 2] });
    expect(human.unconsumed()).toEqual([]);
    expect(received().map((r) => r.key)).toEqual(["b"]);
    expect(calls(paused.session_id)).toMatchObject([
      { tool: "set", seq: 0, state: "done", ok: 0, error_kind: "TOOL_DENIED" },
      { tool: "set", seq: 0, state: "replayed", ok: 0, error_kind: "TOOL_DENIED" },
      { tool: "set", seq: 1, state: "done", ok: 1 },
    ]);
  });
});

describe("a call in doubt (sent, then the process died with no outcome logged)", () => {
  const STEP = `
    const r = await charge({ id: 9, amount: 3 });
    const s = await set({ key: "z", value: 1 });
    return r.receipt;`;

  /** Runs the step until it pauses on the set's approval, then leaves the charge as a kill would: sent. */
  async function chargeInDoubt(): Promise<string> {
    const paused = await loop(new PolicyChannel("defer"), [snap()], [code(PLAN, 0, STEP)]).run("charge");
    // Its intent stays, its finished row is gone: what a kill while it was in flight leaves.
    store.db
      .prepare(
        `INSERT INTO tool_intents (session_id, step_index, seq, server, tool, args_sha, args_json, started_at, ord)
          SELECT session_id, step_index, seq, server, tool, args_sha, args_json, started_at, ord FROM tool_calls
          WHERE session_id = ? AND tool = 'charge'`,
      )
      .run(paused.session_id);
    store.db
      .prepare("DELETE FROM tool_calls WHERE session_id = ? AND tool = 'charge'")
      .run(paused.session_id);
    shop.clear();
    return paused.session_id;
  }

  it("with no person to ask, the step fails with IN_DOUBT and the charge is not made again", async () => {
    const id = await chargeInDoubt();
    const s = await loop(undefined, [snap()], []).resume(interrupted(id));
    expect(s.steps[0]!.execution_result?.error).toMatchObject({ code: "IN_DOUBT", tool: "shop.charge" });
    expect(received()).toEqual([]);
    expect(calls(id)[0]).toMatchObject({ tool: "charge", state: "in_doubt", error_kind: "IN_DOUBT" });
  });

  it("a person gives the result it had: the step goes on with it, nothing is charged again", async () => {
    const id = await chargeInDoubt();
    const human = answers({
      in_doubt: [{ choice: "give_result", value: { receipt: "r-9", amount: 3 } }],
      approval: [{ choice: "allow_once" }],
    });
    const s = await loop(human, [achieved("done")], []).resume(interrupted(id));
    expect(s.steps[0]!.execution_result).toMatchObject({ ok: true, value: "r-9" });
    expect(received().map((r) => r.tool)).toEqual(["set"]);
    // Logged as the call's outcome, with who decided it: a later resume of the step replays it.
    expect(store.stepCalls(id, 0)[0]).toMatchObject({
      state: "done",
      result_json: '{"receipt":"r-9","amount":3}',
    });
    expect(calls(id).find((c) => (c as { decided_by?: string }).decided_by)).toMatchObject({
      tool: "charge",
      state: "done",
      ok: 1,
      decided_by: "scripted:give_result",
    });
  });

  it("skip: the code gets a ToolError IN_DOUBT (uncaught here, so the step fails with it); nothing is charged", async () => {
    const id = await chargeInDoubt();
    const human = answers({ in_doubt: [{ choice: "skip" }] });
    const s = await loop(human, [snap()], []).resume(interrupted(id));
    expect(s.steps[0]!.execution_result?.error).toMatchObject({ code: "IN_DOUBT" });
    expect(received()).toEqual([]);
  });
});

describe("replay keeps the step on its path", () => {
  // The code waits on the clock between the charges (many readings of each millisecond), and the second charge
  // carries the time; the set asks for approval, so the session pauses there.
  const step = `
    const pick = Math.floor(Math.random() * 1000);
    const t0 = Date.now();
    await charge({ id: pick, amount: 1 });
    while (Date.now() - t0 < 25) {}
    await charge({ id: pick + 1, amount: Date.now() });
    await set({ key: "t", value: Date.now() });
    return [pick, Date.now() - t0 >= 25];`;

  it("Math.random gives the same numbers and Date the same readings when the step is replayed", async () => {
    const paused = await loop(new PolicyChannel("defer"), [snap()], [code(PLAN, 0, step)]).run("random");
    expect(paused.status).toBe("awaiting_human");
    const charges = () => received().filter((r) => r.tool === "charge");
    const first = charges();
    expect(first).toHaveLength(2);
    const done = await loop(answers({ approval: [{ choice: "allow_once" }] }), [achieved("done")], []).resume(
      store.getSession(paused.session_id),
    );
    expect(done.steps[0]!.execution_result).toMatchObject({ ok: true });
    const [pick, waited] = done.steps[0]!.execution_result!.value as [number, boolean];
    // Both charges matched their log (the same pick; the same time, read again from the log), so neither was
    // made again; the set past the log was made, once.
    expect(charges()).toEqual(first);
    expect(first[0]).toMatchObject({ id: pick, amount: 1 });
    expect(waited).toBe(true);
    expect(received().filter((r) => r.tool === "set")).toHaveLength(1);
    expect(
      (calls(paused.session_id) as { tool: string; state: string }[]).map((c) => [c.tool, c.state]),
    ).toEqual([
      ["charge", "done"],
      ["charge", "done"],
      ["charge", "replayed"],
      ["charge", "replayed"],
      ["set", "done"],
    ]);
  });

  it("code that takes another path on replay fails the step with REPLAY_MISMATCH, and is not sent", async () => {
    const paused = await loop(new PolicyChannel("defer"), [snap()], [code(PLAN, 0, step)]).run("random 2");
    const s = store.getSession(paused.session_id);
    s.steps[0]!.code = step.replace("id: pick", "id: pick + 1");
    const failed = await loop(undefined, [snap()], []).resume(s);
    expect(failed.steps[0]!.execution_result?.error).toMatchObject({ code: "REPLAY_MISMATCH" });
    expect(failed.steps[0]!.execution_result?.error?.message).toMatch(
      /call 1 was shop\.charge before the restart.*with other arguments/,
    );
    expect(received().filter((r) => r.tool === "charge")).toHaveLength(2);
  });
});
