/**
 * Replaying team sessions: a logged tree of sessions played back, each sub-agent session from its own logged
 * outputs. Real loops, the real math server, a real SQLite store.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId, type LlmCallRecord } from "../../core/index.js";
import { StructuredProvider, type Script } from "../../llm/index.js";
import { loggedTree, ReplayTransport, TreeReplay } from "../replay/index.js";
import { PlannerOutput } from "../team/index.js";
import { achieved, code, snap, startHarness, stepOk, type Harness } from "./harness.js";
import { subCode, teamRun } from "./team.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h.close());

const TEAM = `
agents:
  boss:
    description: Coordinates arithmetic helpers.
    subagents: [adder, pc]
  adder:
    description: Adds with math.add, and may ask pc.
    tools: [math.add]
    subagents: [pc]
  pc:
    description: Plans, then codes.
    tools: ["math.*"]
    decision: planner_coder
`;
const PLAN = ["Step 0: delegate", "Step 1: delegate again", "Step 2: answer"];
const report = (value: string) =>
  `await agent.report({success: true, error_code: "NONE", reason: "done", result: ${value}});`;

/** The run to replay: two adders in parallel (one asks pc), then pc directly; pc plans and codes. */
function script(): Script {
  return {
    perception: [snap(), stepOk(), achieved("5, 30 and 42")],
    decision: [
      code(
        PLAN,
        0,
        `return await parallel([() => agents.adder({task: "add 2 and 3"}), () => agents.adder({task: "add 10 and 20 via pc"})]);`,
      ),
      code(PLAN, 1, `return await agents.pc({task: "multiply 6 by 7"});`),
    ],
    // The two adder sessions take these in the order they ask; the log keeps which got which.
    "adder.perception": [snap(), snap()],
    "adder.decision": [
      subCode(report("await add(2, 3)")),
      subCode(`const r = await agents.pc({task: "add 10 and 20"}); ${report("r.result")}`),
    ],
    "pc.perception": [snap(), snap()],
    "pc.planner": [
      { ...subCode(""), code: undefined, brief: "add 10 and 20, report the sum" },
      { ...subCode(""), code: undefined, brief: "multiply 6 by 7, report the product" },
    ],
    "pc.coder": [{ code: report("await add(10, 20)") }, { code: report("await multiply(6, 7)") }],
  };
}

describe("replaying a team session", () => {
  it("rebuilds the same tree, each sub-agent session playing its own logged outputs, and finds no difference", async () => {
    const run = teamRun(h, TEAM, "boss", script());
    const logged = await run.loop.run("What are 2 + 3, 10 + 20 and 6 * 7?");
    expect(run.transport.unconsumed()).toEqual({});
    expect(logged.status).toBe("succeeded");
    expect(logged.steps.map((s) => s.execution_result?.value)).toMatchObject([
      [{ result: 5 }, { result: 30 }],
      { result: 42 },
    ]);

    const replay = new TreeReplay(loggedTree(h.store, logged.session_id), newId());
    const model = replay.root;
    const again = teamRun(
      h,
      TEAM,
      "boss",
      {},
      {
        deps: { models: { perception: model, decision: model } },
        team: { modelFor: replay.modelFor },
      },
    );
    const replayed = await again.loop.run(logged.original_query, { sessionId: replay.rootId });
    expect(again.transport.calls).toEqual([]); // no scripted turn: every output came from the log
    expect(replayed.status).toBe("succeeded");

    const comparisons = replay.compare((id) => h.store.getSession(id));
    // boss, adder (2 + 3), adder (via pc), its pc, then pc (6 * 7): the logged tree, depth first.
    expect(comparisons.map((c) => c.agent ?? "boss")).toEqual(["boss", "adder", "adder", "pc", "pc"]);
    for (const c of comparisons) {
      expect(c).toMatchObject({ same_answer: true, differences: [], unconsumed_model_outputs: {} });
      expect(c.replayed_session_id).not.toBeNull();
    }
    // The replayed tree has the logged shape, and each replayed session ran its own logged session's code.
    for (const c of comparisons.slice(1)) {
      const a = h.store.getSession(c.logged_session_id!);
      const b = h.store.getSession(c.replayed_session_id!);
      expect(b.steps.map((s) => s.code)).toEqual(a.steps.map((s) => s.code));
      expect(b.parent_session_id).toBe(
        comparisons.find((p) => p.logged_session_id === a.parent_session_id)!.replayed_session_id,
      );
    }
  });

  it("reports a sub-agent session the replay started that the log does not have; the sessions it has compare as usual", async () => {
    const run = teamRun(h, TEAM, "boss", {
      perception: [snap(), achieved("5")],
      decision: [code(PLAN, 0, `return await agents.adder({task: "add 2 and 3"});`)],
      "adder.perception": [snap()],
      "adder.decision": [subCode(report("await add(2, 3)"))],
    });
    const logged = await run.loop.run("What is 2 + 3?");
    expect(logged.status).toBe("succeeded");

    // The logged boss decision is replayed by a boss whose CODE now calls adder twice: the second has no log.
    const tree = loggedTree(h.store, logged.session_id);
    const decision = tree.calls.find((c) => c.role === "decision")!;
    decision.value = code(
      PLAN,
      0,
      `const a = await agents.adder({task: "add 2 and 3"}); const b = await agents.adder({task: "again"}); return a;`,
    );
    const replay = new TreeReplay(tree, newId());
    const again = teamRun(
      h,
      TEAM,
      "boss",
      {},
      {
        deps: { models: { perception: replay.root, decision: replay.root } },
        team: { modelFor: replay.modelFor },
      },
    );
    await again.loop.run(logged.original_query, { sessionId: replay.rootId });
    const [boss, adder, extra, ...rest] = replay.compare((id) => h.store.getSession(id));
    expect(rest).toEqual([]);
    expect(boss).toMatchObject({ same_answer: true, differences: [] }); // a is returned either way
    expect(adder).toMatchObject({ agent: "adder", same_answer: true, differences: [] });
    expect(extra).toMatchObject({
      agent: "adder",
      logged_session_id: null,
      parent_session_id: logged.session_id,
      status: { logged: null, replayed: "failed" },
      same_answer: false,
    });
    const unlogged = h.store.getSession(extra!.replayed_session_id!);
    expect(unlogged.status_reason).toMatch(/SCRIPT_EXHAUSTED|no more logged "perception" outputs/);
  });
});

describe("a planner-coder decision in the log", () => {
  it("is two rows, the planner's and the coder's, each with its own prompt, reply, tokens and cost; replay plays each from its row", async () => {
    const planned = {
      plan_text: ["Step 0: multiply", "Step 1: answer"],
      step_index: 0,
      description: "multiply",
      type: "CODE",
      brief: "multiply 6 by 7 and return the product",
    };
    const run = teamRun(
      h,
      TEAM,
      "pc",
      {
        perception: [snap(), achieved("42")],
        planner: [planned],
        coder: [{ code: "return await multiply(6, 7);" }],
      },
      { price: { input_per_mtok: 1, output_per_mtok: 10 } },
    );
    const logged = await run.loop.run("What is 6 * 7?");
    expect(run.transport.unconsumed()).toEqual({});
    expect([logged.status, logged.state.final_answer]).toEqual(["succeeded", "42"]);

    const calls = h.store.llmCalls(logged.session_id);
    expect(calls.map((c) => c.role)).toEqual(["perception", "planner", "coder", "perception"]);
    const planner = calls[1]!;
    const coder = calls[2]!;
    expect(JSON.parse(planner.raw_response)).toEqual(planned);
    expect(planner.value).toEqual(planned);
    expect(JSON.parse(coder.raw_response)).toEqual({ code: "return await multiply(6, 7);" });
    expect(coder.value).toEqual({ code: "return await multiply(6, 7);" });
    // Each prompt is the one its model was sent: the coder's holds the planner's brief, the planner's does not.
    expect(coder.prompt).toContain(planned.brief);
    expect(planner.prompt).not.toContain(planned.brief);
    expect(planner.prompt).not.toBe(coder.prompt);
    for (const c of [planner, coder]) {
      expect(c).toMatchObject({ ok: true, attempts: 1 });
      expect(c.input_tokens).toBeGreaterThan(0);
      expect(c.cost_usd).toBeGreaterThan(0);
    }
    // The session's usage is the sum of its rows: nothing merged, nothing counted twice.
    const sum = (f: (c: (typeof calls)[number]) => number) => calls.reduce((n, c) => n + f(c), 0);
    expect(logged.usage).toMatchObject({
      llm_calls: calls.length,
      input_tokens: sum((c) => c.input_tokens),
      output_tokens: sum((c) => c.output_tokens),
    });
    expect(logged.usage.cost_usd).toBeCloseTo(
      sum((c) => c.cost_usd ?? 0),
      12,
    );

    const replay = new TreeReplay(loggedTree(h.store, logged.session_id), newId());
    const again = teamRun(
      h,
      TEAM,
      "pc",
      {},
      { deps: { models: { perception: replay.root, decision: replay.root } } },
    );
    const replayed = await again.loop.run(logged.original_query, { sessionId: replay.rootId });
    expect(again.transport.calls).toEqual([]);
    expect(replay.compare((id) => h.store.getSession(id))).toMatchObject([
      { same_answer: true, differences: [], unconsumed_model_outputs: {} },
    ]);
    expect(h.store.llmCalls(replayed.session_id).map((c) => [c.role, c.value])).toEqual(
      calls.map((c) => [c.role, c.value]),
    );
  });
});

describe("ReplayTransport", () => {
  const call = (over: Partial<LlmCallRecord>): LlmCallRecord => ({
    role: "decision",
    provider: "p",
    model: "m",
    ok: true,
    input_tokens: 10,
    output_tokens: 5,
    latency_ms: 1,
    attempts: 1,
    prompt: "",
    raw_response: "",
    started_at: "2026-01-01T00:00:00.000Z",
    ...over,
  });
  const turn = (role: string) => ({ role, system: "", prompt: "", jsonSchema: {}, schemaName: "" });

  it("plays a planner turn and a coder turn from their own rows", async () => {
    const planned = { ...planStep(), brief: "add 1 and 2" };
    const t = new ReplayTransport(
      [
        call({ role: "planner", value: planned }),
        call({ role: "coder", value: { code: "return await add(1, 2);" }, input_tokens: 7 }),
      ],
      "s",
      "pc",
    );
    const provider = new StructuredProvider(t, { repair_rounds: 0 });
    const p = await provider.generate({
      ...turn("pc.planner"),
      schema: PlannerOutput,
      schemaName: "PlannerOutput",
    });
    expect(p.value).toEqual(planned);
    expect(p.usage).toEqual({ input_tokens: 10, output_tokens: 5 });
    const c = await t.complete(turn("pc.coder"));
    expect(JSON.parse(c.text)).toEqual({ code: "return await add(1, 2);" });
    expect(c.usage).toEqual({ input_tokens: 7, output_tokens: 5 });
    expect(t.unconsumed()).toEqual({});
    await expect(t.complete(turn("pc.coder"))).rejects.toThrow(/no more logged "coder" outputs \(1 played\)/);
  });

  it("refuses a planner turn when the log has only decision rows (a single decision, or the old merged planner-coder row), and says when the log has no more outputs", async () => {
    // A planner-coder decision as it was logged before the planner and coder had rows of their own.
    const merged = call({
      raw_response: `planner: ${JSON.stringify({ ...planStep(), brief: "one" })}\ncoder: {"code":"return 1;"}`,
      value: { ...planStep(), code: "return 1;" },
    });
    const t = new ReplayTransport([merged, call({ role: "perception", value: snap() })], "s1");
    await expect(t.complete(turn("planner"))).rejects.toMatchObject({
      code: "SCRIPT_EXHAUSTED",
      message: expect.stringMatching(
        /^replay of session s1: the log has no planner or coder calls to play: .* one "decision" row/,
      ),
    });
    expect(t.unconsumed()).toEqual({ decision: 1, perception: 1 });
    await t.complete(turn("perception"));
    await expect(t.complete(turn("perception"))).rejects.toMatchObject({
      code: "SCRIPT_EXHAUSTED",
      message: expect.stringMatching(/no more logged "perception" outputs \(1 played\)/),
    });
  });
});

function planStep() {
  return { plan_text: ["Step 0: one"], step_index: 0, description: "one", type: "CODE" };
}
