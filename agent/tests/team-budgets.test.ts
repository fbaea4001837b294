/**
 * Budgets across a team: what sub-agents spend counts against their callers' budgets as it is spent. Real
 * loops with scripted models, the real math server, a real SQLite store.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Budgets } from "../../config/index.js";
import { ModelError, type Clock, type RawCompletion, type RawTurn } from "../../core/index.js";
import { ScriptedTransport, StructuredProvider, type Transport } from "../../llm/index.js";
import { FakeClock } from "../../testing/index.js";
import { summarize } from "../kernel/index.js";
import { code, snap, startHarness, stepOk, type Harness } from "./harness.js";
import { subCode, teamRun } from "./team.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h.close());

// The sub-agents' own budgets are roomy: only their callers' can stop them here.
const TEAM = `
agents:
  boss:
    description: Coordinates arithmetic helpers.
    subagents: [adder, multiplier]
  adder:
    description: Adds two numbers with math.add.
    tools: [math.add]
    budgets: { max_llm_calls: 20, max_tokens: 1000000, max_wall_ms: 3600000 }
  multiplier:
    description: Multiplies two numbers.
    tools: [math.multiply]
    budgets: { max_llm_calls: 20, max_tokens: 1000000, max_wall_ms: 3600000 }
`;

const PLAN = ["Step 0: delegate to the agents", "Step 1: answer"];
const CALL_ADDER = code(PLAN, 0, `return await agents.adder({task: "add 2 and 3"});`);
const ADDER_REPORTS = subCode(
  `await agent.report({success: true, error_code: "NONE", reason: "added", result: await add(2, 3)});`,
);
/** A profile with these budgets over the defaults. */
const budgets = (over: Partial<Budgets>) => ({ budgets: Budgets.parse(over) });
const PRICE = { input_per_mtok: 1, output_per_mtok: 10 };

describe("a team's budgets", () => {
  it("a parent whose model-call budget its sub-agent spent ends budget_exhausted; each session keeps its own usage, the summary rolls them up", async () => {
    const { loop, transport } = teamRun(
      h,
      TEAM,
      "boss",
      {
        perception: [snap(), stepOk()],
        decision: [CALL_ADDER],
        "adder.perception": [snap()],
        "adder.decision": [ADDER_REPORTS],
      },
      { profile: budgets({ max_llm_calls: 5 }), price: PRICE },
    );
    const s = await loop.run("What is 2 + 3?");
    expect(transport.unconsumed()).toEqual({});
    // The sub-agent did its work with two calls; the parent had one left, to perceive the result, and no more.
    expect(s.steps[0]!.execution_result).toMatchObject({ ok: true, value: { success: true, result: 5 } });
    expect([s.status, s.status_reason]).toEqual([
      "budget_exhausted",
      "reached the model-call budget (5 calls): 3 by this session, 2 by its sub-agents",
    ]);

    // Each row keeps its own usage.
    const parent = h.store.getSession(s.session_id);
    const [childItem] = h.store.childSessions(s.session_id);
    const child = h.store.getSession(childItem!.session_id);
    expect([parent.usage.llm_calls, child.usage.llm_calls]).toEqual([3, 2]);
    expect(parent.status).toBe("budget_exhausted");
    expect(child.usage.cost_usd).toBeGreaterThan(0);

    // The summary (pda run --json) adds the sub-agents' spending beside the session's own.
    const summary = summarize(parent);
    expect(summary).toMatchObject({ llm_calls: 3, tokens: parent.usage.tokens });
    expect(summary.with_subagents).toEqual({
      subagent_calls: 1,
      llm_calls: 5,
      tokens: parent.usage.tokens + child.usage.tokens,
      cost_usd: Number((parent.usage.cost_usd + child.usage.cost_usd).toFixed(6)),
    });
  });

  it("a sub-agent started when its caller has one model call left gets that one call, then stops saying whose budget ran out", async () => {
    const { loop, transport } = teamRun(
      h,
      TEAM,
      "boss",
      { perception: [snap()], decision: [CALL_ADDER], "adder.perception": [snap()] },
      { profile: budgets({ max_llm_calls: 3 }) },
    );
    const s = await loop.run("What is 2 + 3?");
    expect(transport.unconsumed()).toEqual({});
    const report = s.steps[0]!.execution_result!.value as Record<string, unknown>;
    expect(report).toMatchObject({ success: false, error_code: "UNKNOWN" });
    expect(report.reason).toBe(
      `budget_exhausted: its caller boss (session ${s.session_id}) reached the model-call budget (3 calls): 2 by boss, 1 by its sub-agents`,
    );
    const child = h.store.getSession(report.session_id as string);
    expect([child.status, child.usage.llm_calls]).toEqual(["budget_exhausted", 1]);
    expect([s.status, s.status_reason]).toEqual([
      "budget_exhausted",
      "reached the model-call budget (3 calls): 2 by this session, 1 by its sub-agents",
    ]);
  });

  it("two sub-agents in parallel cannot both take the caller's last model call", async () => {
    const { loop, transport } = teamRun(
      h,
      TEAM,
      "boss",
      {
        perception: [snap()],
        decision: [
          code(
            PLAN,
            0,
            `return await parallel([
               () => agents.adder({task: "add 2 and 3"}),
               () => agents.multiplier({task: "multiply 6 by 7"}),
             ]);`,
          ),
        ],
        "adder.perception": [snap()],
      },
      { profile: budgets({ max_llm_calls: 3 }) },
    );
    const s = await loop.run("What are 2 + 3 and 6 * 7?");
    expect(transport.unconsumed()).toEqual({});
    const children = h.store.childSessions(s.session_id).map((c) => h.store.getSession(c.session_id));
    expect(children.map((c) => [c.agent, c.status, c.usage.llm_calls])).toEqual([
      ["adder", "budget_exhausted", 1],
      ["multiplier", "budget_exhausted", 0],
    ]);
    expect(children[1]!.status_reason).toMatch(
      /^its caller boss \(session .*\) reached the model-call budget \(3 calls\): 2 by boss, 1 by its sub-agents$/,
    );
    expect(summarize(s).with_subagents).toMatchObject({ subagent_calls: 2, llm_calls: 3 });
    expect(s.status).toBe("budget_exhausted");
  });

  it("a planner-coder sub-agent with one model call left makes its planner call and stops before its coder call", async () => {
    const withPc = `
agents:
  boss: { description: asks pc, subagents: [pc] }
  pc:
    description: Plans, then codes.
    tools: [math.multiply]
    decision: planner_coder
    budgets: { max_llm_calls: 20 }
`;
    const { loop, transport } = teamRun(
      h,
      withPc,
      "boss",
      {
        perception: [snap()],
        decision: [code(PLAN, 0, `return await agents.pc({task: "multiply 6 by 7"});`)],
        "pc.perception": [snap()],
        "pc.planner": [{ ...subCode(""), code: undefined, brief: "multiply 6 by 7, report the product" }],
        // No coder turn: a coder call would be a call past the script, failing the test.
      },
      { profile: budgets({ max_llm_calls: 4 }) },
    );
    const s = await loop.run("What is 6 * 7?");
    // Boss spent two calls and pc its perception: the planner took the last one, the coder was never asked.
    expect(transport.unconsumed()).toEqual({});
    expect(transport.calls.map((c) => c.role)).not.toContain("pc.coder");
    const [item] = h.store.childSessions(s.session_id);
    const child = h.store.getSession(item!.session_id);
    expect([child.status, child.usage.llm_calls, child.steps]).toEqual(["budget_exhausted", 2, []]);
    expect(child.status_reason).toBe(
      `its caller boss (session ${s.session_id}) reached the model-call budget (4 calls): 2 by boss, 2 by its sub-agents`,
    );
    expect(h.store.llmCalls(child.session_id).map((c) => [c.role, c.ok])).toEqual([
      ["perception", true],
      ["planner", true],
    ]);
    expect(summarize(s).with_subagents).toMatchObject({ subagent_calls: 1, llm_calls: 4 });
    expect(s.status).toBe("budget_exhausted");
  });

  it("the root's budget reaches a sub-agent's sub-agent", async () => {
    const nested = `
agents:
  top: { description: asks mid, subagents: [mid] }
  mid: { description: asks leaf and reports, subagents: [leaf], budgets: { max_llm_calls: 20 } }
  leaf: { description: adds, tools: [math.add], budgets: { max_llm_calls: 20 } }
`;
    const { loop, transport } = teamRun(
      h,
      nested,
      "top",
      {
        perception: [snap()],
        decision: [code(PLAN, 0, `return await agents.mid({task: "get 1 + 1 from leaf"});`)],
        "mid.perception": [snap()],
        "mid.decision": [
          subCode(
            `const r = await agents.leaf({task: "add 1 and 1"});
             await agent.report({success: false, error_code: "UNKNOWN", reason: "leaf said: " + r.reason});`,
          ),
        ],
        "leaf.perception": [snap()],
      },
      { profile: budgets({ max_llm_calls: 5 }) },
    );
    const s = await loop.run("1 + 1 via two levels");
    expect(transport.unconsumed()).toEqual({});
    const [mid] = h.store.childSessions(s.session_id);
    const [leaf] = h.store.childSessions(mid!.session_id);
    expect([leaf!.status, leaf!.llm_calls]).toEqual(["budget_exhausted", 1]);
    expect(leaf!.status_reason).toBe(
      `its caller top (session ${s.session_id}) reached the model-call budget (5 calls): 2 by top, 3 by its sub-agents`,
    );
    expect(s.status_reason).toBe(
      "reached the model-call budget (5 calls): 2 by this session, 3 by its sub-agents",
    );
    expect(summarize(s).with_subagents).toMatchObject({ subagent_calls: 1, llm_calls: 5 });
  });

  it("tokens a sub-agent spends count against the caller's token budget", async () => {
    // A first run measures what the parent spends up to calling the sub-agent (scripted usage is deterministic):
    // two model calls, and its budget stops it at the step.
    const first = teamRun(
      h,
      TEAM,
      "boss",
      { perception: [snap()], decision: [CALL_ADDER] },
      { profile: budgets({ max_llm_calls: 2 }) },
    );
    const measured = await first.loop.run("What is 2 + 3?");
    expect(measured.status_reason).toBe("reached the model-call budget (2 calls)");
    const before = measured.usage.tokens;

    // With one token left, the sub-agent's first call is allowed and its second is not.
    const { loop, transport } = teamRun(
      h,
      TEAM,
      "boss",
      { perception: [snap()], decision: [CALL_ADDER], "adder.perception": [snap()] },
      { profile: budgets({ max_tokens: before + 1 }) },
    );
    const s = await loop.run("What is 2 + 3?");
    expect(transport.unconsumed()).toEqual({});
    const [childItem] = h.store.childSessions(s.session_id);
    const child = h.store.getSession(childItem!.session_id);
    expect(child.status_reason).toBe(
      `its caller boss (session ${s.session_id}) reached the token budget (${before + 1} tokens): ${before} by boss, ${child.usage.tokens} by its sub-agents`,
    );
    expect(s.status_reason).toBe(
      `reached the token budget (${before + 1} tokens): ${before} by this session, ${child.usage.tokens} by its sub-agents`,
    );
  });

  it("money a sub-agent spends counts against the caller's cost budget", async () => {
    const usd = (n: number) => `$${Number(n.toFixed(6))}`;
    // As with tokens: measure what the parent spends up to calling the sub-agent, then leave it a little more.
    const first = teamRun(
      h,
      TEAM,
      "boss",
      { perception: [snap()], decision: [CALL_ADDER] },
      { profile: budgets({ max_llm_calls: 2 }), price: PRICE },
    );
    const before = (await first.loop.run("What is 2 + 3?")).usage.cost_usd;
    expect(before).toBeGreaterThan(0);
    const max = before * 1.0001;

    const { loop, transport } = teamRun(
      h,
      TEAM,
      "boss",
      { perception: [snap()], decision: [CALL_ADDER], "adder.perception": [snap()] },
      { profile: budgets({ max_cost_usd: max }), price: PRICE },
    );
    const s = await loop.run("What is 2 + 3?");
    expect(transport.unconsumed()).toEqual({});
    const [childItem] = h.store.childSessions(s.session_id);
    const child = h.store.getSession(childItem!.session_id);
    expect([child.status, child.usage.llm_calls]).toEqual(["budget_exhausted", 1]);
    const spent = `${usd(before)} by boss, ${usd(child.usage.cost_usd)} by its sub-agents`;
    expect(child.status_reason).toBe(
      `its caller boss (session ${s.session_id}) reached the cost budget (${usd(max)}): ${spent}`,
    );
    expect([s.status, s.status_reason]).toEqual([
      "budget_exhausted",
      `reached the cost budget (${usd(max)}): ${spent.replace("by boss", "by this session")}`,
    ]);
  });

  it("a caller's wall-time budget bounds its sub-agents", async () => {
    const clock = new FakeClock();
    // The sub-agent's model takes 1.5 s of the caller's 1 s.
    const slow = new StructuredProvider(
      new SlowTransport(new ScriptedTransport({ "adder.perception": [snap()] }), clock, 1500),
    );
    const { loop, transport } = teamRun(
      h,
      TEAM,
      "boss",
      { perception: [snap()], decision: [CALL_ADDER] },
      {
        profile: budgets({ max_wall_ms: 1000 }),
        deps: { clock },
        team: { modelFor: (a) => (a.name === "adder" ? slow : undefined) },
      },
    );
    const s = await loop.run("What is 2 + 3?");
    expect(transport.unconsumed()).toEqual({});
    const [child] = h.store.childSessions(s.session_id);
    expect([child!.status, child!.llm_calls]).toEqual(["budget_exhausted", 1]);
    expect(child!.status_reason).toBe(
      `its caller boss (session ${s.session_id}) reached the time budget (1000 ms)`,
    );
    expect([s.status, s.status_reason]).toEqual(["budget_exhausted", "reached the time budget (1000 ms)"]);
  });
});

/** A transport whose every call takes `ms` of the injected clock's time. */
class SlowTransport implements Transport {
  readonly provider = "slow";
  readonly model = "slow";
  constructor(
    private readonly inner: Transport,
    private readonly clock: Clock & { advance(ms: number): void },
    private readonly ms: number,
  ) {}
  async complete(turn: RawTurn): Promise<RawCompletion> {
    if (turn.signal?.aborted) throw new ModelError("MODEL_TIMEOUT", "cancelled");
    this.clock.advance(this.ms);
    return this.inner.complete(turn);
  }
}
