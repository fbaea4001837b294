import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentSession, type ToolCallRecord, type ToolHost } from "../../core/index.js";
import { ScriptedChannel } from "../../hil/index.js";
import { achieved, code, snap, startHarness, stepOk, type Harness } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h.close());

const PLAN = ["Step 0: compute with the math tools", "Step 1: answer"];

describe("AgentLoop", () => {
  it("perceives, plans, runs CODE against the math server and ends on perception's answer", async () => {
    const { loop, transport } = h.loop({
      perception: [snap(), achieved("31")],
      decision: [
        code(PLAN, 0, "const p = await multiply(3, 2);\nreturn await subtract(await add(32, 5), p);"),
      ],
    });
    const hubRecords: ToolCallRecord[] = [];
    const off = h.hub.onCall((r) => hubRecords.push(r));
    const s = await loop.run("What is 32 + 5 - 3 * 2");
    off();
    expect(s.status).toBe("succeeded");
    expect(s.state.final_answer).toBe("31");
    expect(s.steps[0]!.execution_result).toMatchObject({ ok: true, value: 31 });
    expect(s.usage.tool_calls).toBe(3);
    expect(transport.unconsumed()).toEqual({});
    // What the model was shown: the tools with signatures, then the step's code and result.
    expect(transport.calls[1]!.system).toMatch(/multiply\(a: number, b: number\)/);
    expect(transport.calls[2]!.prompt).toMatch(/ok: 31/);
    expect(transport.calls[2]!.prompt).toMatch(/await multiply\(3, 2\)/);
    // Written as it happened.
    const stored = h.store.getSession(s.session_id);
    expect(stored).toEqual(s);
    expect(h.store.toolCalls({ session_id: s.session_id }).map((c) => c.tool)).toEqual([
      "multiply",
      "add",
      "subtract",
    ]);
    // The session logs the hub's own record of each call (measured once, by the hub), not a second measurement.
    const logged = h.store
      .toolCalls({ session_id: s.session_id })
      .map((c) => [c.tool, c.bytes, c.latency_ms]);
    expect(logged).toEqual(hubRecords.map((r) => [r.tool, r.bytes, r.latency_ms]));
  });

  it("logs the calls its caller made for the session before running it first, in no step", async () => {
    const { loop } = h.loop({
      perception: [snap(), achieved("8")],
      decision: [code(["Step 0: add"], 0, "return await add(5, 3)")],
    });
    // A call the caller made itself, as the hub recorded it, with what it was given and returned.
    let prior: ToolCallRecord | undefined;
    const five = await h.hub.call("math.add", { a: 2, b: 3 }, { onRecord: (r) => (prior = r) });
    const record = { ...prior!, args_json: '{"a":2,"b":3}', result_json: JSON.stringify(five) };
    const s = await loop.run("What is 2 + 3 + 3?", { priorCalls: [record] });
    expect(s.status).toBe("succeeded");
    expect(s.usage.tool_calls).toBe(2);
    const calls = h.store.toolCalls({ session_id: s.session_id });
    expect(calls.map((c) => [c.tool, c.step_index, c.args_json])).toEqual([
      ["add", null, '{"a":2,"b":3}'],
      ["add", 0, '{"a":5,"b":3}'],
    ]);
    expect(calls[0]).toMatchObject(record);
    // The session's page shows it as a call outside any step, before the first step.
    const kinds = h.store.timeline(s.session_id).events.map((e) => e.kind);
    expect(kinds.indexOf("tool")).toBeGreaterThanOrEqual(0);
    expect(kinds.indexOf("tool")).toBeLessThan(kinds.indexOf("step"));
  });

  it("exits early when perception finds the goal already achieved: no plan, no step", async () => {
    const { loop, transport } = h.loop({ perception: [achieved("Hello! How can I help?")] });
    const s = await loop.run("hello");
    expect(s).toMatchObject({ status: "succeeded", steps: [], plan_versions: [] });
    expect(s.state.final_answer).toBe("Hello! How can I help?");
    expect(transport.calls).toHaveLength(1);
  });

  it("replans after a failed step: a new plan version with its reason, and the failure shown to the model", async () => {
    const plan2 = ["Step 0: divide safely, checking the divisor first", "Step 1: answer"];
    const { loop, transport } = h.loop({
      perception: [snap(), snap({ local_reasoning: "the division failed" }), achieved("5")],
      decision: [code(PLAN, 0, "return await divide(10, 0)"), code(plan2, 0, "return await divide(10, 2)")],
    });
    const s = await loop.run("What is 10 divided by 2?");
    expect(s.status).toBe("succeeded");
    expect(s.steps.map((st) => [st.status, st.attempts, st.error?.code])).toEqual([
      ["failed", 1, "TOOL_ERROR"],
      ["completed", 2, undefined],
    ]);
    expect(s.plan_versions.map((p) => [p.version, p.reason, p.triggered_by, p.steps])).toEqual([
      [1, "initial", "snapshot:0", [0]],
      [2, "replan_after_failure", "step:0", [1]],
    ]);
    expect(transport.calls[3]!.prompt).toMatch(/The last step failed \(TOOL_ERROR: .*zero/i);
    expect(s.original_query).toBe("What is 10 divided by 2?");
    // The session crosses JSON and back losslessly, validated by its schema.
    expect(AgentSession.parse(JSON.parse(JSON.stringify(s)))).toEqual(s);
  });

  it("moves to the next step of the same plan without a new plan version", async () => {
    const { loop } = h.loop({
      perception: [snap(), stepOk(), achieved("8")],
      decision: [code(PLAN, 0, "return await add(3, 1)"), code(PLAN, 1, "return await multiply(4, 2)")],
    });
    const s = await loop.run("(3 + 1) * 2");
    expect(s.status).toBe("succeeded");
    expect(s.plan_versions).toHaveLength(1);
    expect(s.plan_versions[0]!.steps).toEqual([0, 1]);
    expect(s.steps.map((st) => st.plan_step)).toEqual([0, 1]);
  });

  it("CONCLUDE ends with the conclusion as the answer", async () => {
    const { loop } = h.loop({
      perception: [snap(), stepOk()],
      decision: [
        code(PLAN, 0, "return await power(2, 10)"),
        { plan_text: PLAN, step_index: 1, description: "answer", type: "CONCLUDE", conclusion: "1024" },
      ],
    });
    const s = await loop.run("2 to the 10th");
    expect(s).toMatchObject({ status: "succeeded", state: { final_answer: "1024" } });
    expect(s.steps.map((st) => st.type)).toEqual(["CODE", "CONCLUDE"]);
  });

  it("ends with budget_exhausted and a partial answer when the step budget runs out", async () => {
    const { loop } = h.loop(
      {
        // The budget stops the loop before a third perception or decision.
        perception: [snap(), stepOk()],
        decision: [code(PLAN, 0, "return await add(1, 1)"), code(PLAN, 1, "return await add(2, 2)")],
      },
      { budgets: { max_steps: 2 } as never },
    );
    const s = await loop.run("keep adding");
    expect(s.status).toBe("budget_exhausted");
    expect(s.status_reason).toMatch(/step budget \(2 steps\)/);
    expect(s.state.final_answer).toBe("4");
    expect(s.steps).toHaveLength(2);
  });

  it("ends with budget_exhausted when one step keeps failing past its attempts", async () => {
    const { loop } = h.loop(
      {
        perception: [snap(), snap(), snap()],
        decision: [code(PLAN, 0, "return await factorial(-1)"), code(PLAN, 0, "return await factorial(-2)")],
      },
      { budgets: { max_attempts_per_step: 2 } as never },
    );
    const s = await loop.run("factorial of minus one");
    expect(s.status).toBe("budget_exhausted");
    expect(s.status_reason).toMatch(/step 1 \(plan step 0\) failed 2 times/);
  });

  it("stops on the model-call budget", async () => {
    const { loop } = h.loop(
      { perception: [snap(), stepOk()], decision: [code(PLAN, 0, "return 1")] },
      { budgets: { max_llm_calls: 3 } as never },
    );
    const s = await loop.run("anything");
    expect(s.status).toBe("budget_exhausted");
    expect(s.status_reason).toMatch(/model-call budget/);
    expect(s.usage.llm_calls).toBe(3);
  });

  it("stops on the cost budget, saying what was spent", async () => {
    // A steep price, so one call spends more than the budget.
    const price = { input_per_mtok: 1000, output_per_mtok: 1000 };
    const { loop, transport } = h.loop(
      { perception: [snap()] },
      { budgets: { max_cost_usd: 0.01 } as never },
      {},
      price,
    );
    const s = await loop.run("anything");
    expect(transport.unconsumed()).toEqual({});
    expect(s.usage.llm_calls).toBe(1);
    expect(s.usage.cost_usd).toBeCloseTo(s.usage.tokens / 1000, 12);
    expect([s.status, s.status_reason]).toEqual([
      "budget_exhausted",
      `reached the cost budget ($0.01): $${Number(s.usage.cost_usd.toFixed(6))} by this session`,
    ]);
  });

  it("has no cost budget unless the profile sets one", async () => {
    const price = { input_per_mtok: 1000, output_per_mtok: 1000 };
    const { loop } = h.loop({ perception: [achieved("hi")] }, {}, {}, price);
    const s = await loop.run("hello");
    expect(s.status).toBe("succeeded");
    expect(s.usage.cost_usd).toBeGreaterThan(0.1);
  });

  it("ranks the hub's current tool list: a list changed between sessions is ranked anew", async () => {
    let list = h.hub.tools();
    const host: ToolHost = {
      tools: () => list,
      onCall: (l) => h.hub.onCall(l),
      call: (n, a, o) => h.hub.call(n, a, o),
    };
    const answer = { plan_text: ["Step 0: answer"], step_index: 0, description: "answer", type: "CONCLUDE" };
    const toolsShown = async () => {
      const { loop, transport } = h.loop(
        { perception: [snap()], decision: [{ ...answer, conclusion: "5" }] },
        { tool_top_k: 2 },
        { host },
      );
      await loop.run("the hypotenuse of a right triangle with legs 3 and 4");
      return transport.calls[1]!.system;
    };
    expect(await toolsShown()).not.toMatch(/hypotenuse\(/);
    const hypotenuse = {
      ...list[0]!,
      server: "geo",
      name: "hypotenuse",
      qualified: "geo.hypotenuse",
      description: "The hypotenuse of a right triangle with legs a and b.",
    };
    list = [...list, hypotenuse];
    expect(await toolsShown()).toMatch(/hypotenuse\(a: number, b: number\)/);
  });

  it("repairs a schema-invalid decision once, showing the model its error", async () => {
    const { loop, transport } = h.loop({
      perception: [snap(), achieved("6")],
      decision: [
        { plan_text: PLAN, step_index: 0, description: "multiply", type: "CODE" }, // no code
        code(PLAN, 0, "return await multiply(2, 3)"),
      ],
    });
    const s = await loop.run("2 times 3");
    expect(s.status).toBe("succeeded");
    const decisions = transport.calls.filter((c) => c.role === "decision");
    expect(decisions).toHaveLength(2);
    expect(decisions[1]!.prompt).toMatch(/code/);
    expect(s.usage.llm_calls).toBe(4);
  });

  it("a failing tool surfaces as ToolError in the sandbox, which the code can catch", async () => {
    const source = [
      "try { await divide({a: 1, b: 0}); return 'no error'; }",
      "catch (e) { return { isToolError: e instanceof ToolError, tool: e.tool, code: e.code, message: e.message }; }",
    ].join("\n");
    const { loop } = h.loop({ perception: [snap(), achieved("caught")], decision: [code(PLAN, 0, source)] });
    const s = await loop.run("divide one by zero and tell me what happens");
    const value = s.steps[0]!.execution_result!.value as Record<string, unknown>;
    expect(value).toMatchObject({ isToolError: true, tool: "math.divide", code: "TOOL_ERROR" });
    expect(String(value.message)).toMatch(/zero/i);
  });

  it("a NOP ends the session awaiting a human, with the question", async () => {
    const { loop } = h.loop({
      perception: [snap()],
      decision: [
        {
          plan_text: ["Step 0: ask which unit"],
          step_index: 0,
          description: "ask",
          type: "NOP",
          question: "Celsius or Fahrenheit?",
        },
      ],
    });
    const s = await loop.run("convert 30 degrees");
    expect(s).toMatchObject({ status: "awaiting_human", pending_question: "Celsius or Fahrenheit?" });
    expect(s.steps[0]!.status).toBe("clarification_needed");
  });
});

describe("guards in the loop", () => {
  it("code calling an unknown tool goes back to the decision with the nearest names: no sandbox run, no tool call", async () => {
    const { loop, transport } = h.loop({
      perception: [snap(), achieved("42")],
      decision: [code(PLAN, 0, "return await multiplyy(6, 7)"), code(PLAN, 0, "return await multiply(6, 7)")],
    });
    const s = await loop.run("What is 6 times 7?");
    expect(s.status).toBe("succeeded");
    expect(s.steps[0]).toMatchObject({
      status: "failed",
      attempts: 1,
      execution_result: { tool_calls: [], duration_ms: 0 },
    });
    expect(s.steps[0]!.error!.code).toMatch(/^GUARD_/);
    expect(s.steps[1]).toMatchObject({ status: "completed", attempts: 2 });
    // Only the second step's one call reached the server; perception was not asked about the refused code.
    expect(h.store.toolCalls({ session_id: s.session_id }).map((c) => c.tool)).toEqual(["multiply"]);
    expect(transport.calls.map((c) => c.role)).toEqual(["perception", "decision", "decision", "perception"]);
    expect(transport.calls[2]!.prompt).toMatch(/multiplyy/);
    expect(transport.calls[2]!.prompt).toMatch(/multiply\b/);
  });

  it("an error disguised as a value is a failure", async () => {
    const { loop } = h.loop(
      { perception: [snap(), snap()], decision: [code(PLAN, 0, 'return "Error: file not found"')] },
      { budgets: { max_attempts_per_step: 1 } as never },
    );
    const s = await loop.run("read the file");
    expect(s.steps[0]!.execution_result!.ok).toBe(false);
    expect(s.steps[0]!.error!.code).toMatch(/^GUARD_RESULT/);
  });

  it("a blocklisted word is taken out of what the model sees, and said so; the original query is kept", async () => {
    const { loop, transport } = h.loop({ perception: [achieved("hi")] }, {
      blocklist: ["password"],
    } as never);
    const s = await loop.run("hello, my password is hunter2");
    expect(s.original_query).toBe("hello, my password is hunter2");
    expect(transport.calls[0]!.prompt).not.toMatch(/password is/);
    expect(transport.calls[0]!.prompt).toMatch(/\[removed\]/);
    // ...and perception is told what the guard found.
    expect(transport.calls[0]!.prompt).toMatch(/Checks on the request:\n.*password/);
  });

  it("a query over the hard size limit is refused with a clear message", async () => {
    const { loop, transport } = h.loop({});
    const s = await loop.run("x ".repeat(15_000));
    expect(s.status).toBe("failed");
    expect(s.status_reason).toMatch(/refused/);
    expect(transport.calls).toHaveLength(0);
  });
});

describe("cancellation", () => {
  it("a cancelled session ends aborted, the tool call in flight stopped, and the log says so", async () => {
    const ac = new AbortController();
    const { loop } = h.loop(
      {
        perception: [snap()],
        decision: [code(PLAN, 0, "const a = await add(1, 2);\nwhile (true) {}")],
      },
      {},
      { signal: ac.signal, onEvent: (e) => e.type === "tool_call" && ac.abort(new Error("Ctrl-C")) },
    );
    const s = await loop.run("spin");
    expect(s.status).toBe("aborted");
    expect(s.status_reason).toMatch(/cancelled: Ctrl-C/);
    expect(s.steps[0]!.execution_result!.error!.code).toBe("SANDBOX_CANCELLED");
    expect(h.store.getSession(s.session_id).status).toBe("aborted");
  });
});

describe("replies the model cannot get right", () => {
  const junk = { raw: "I think the answer is probably 42, let me know!" };

  it("a decision still unusable after the repair round is made again, showing the model why", async () => {
    const { loop, transport } = h.loop({
      perception: [snap(), achieved("42")],
      decision: [junk, junk, code(PLAN, 0, "return await multiply(6, 7)")],
    });
    const s = await loop.run("6 times 7");
    expect(s.status).toBe("succeeded");
    const decisions = transport.calls.filter((c) => c.role === "decision");
    expect(decisions).toHaveLength(3);
    expect(decisions[2]!.prompt).toMatch(/Your last reply could not be used \(MODEL_INVALID_OUTPUT/);
    expect(h.store.llmCalls(s.session_id).map((c) => [c.role, c.ok])).toEqual([
      ["perception", true],
      ["decision", false],
      ["decision", true],
      ["perception", true],
    ]);
  });

  it("unusable twice: the human is asked how to go on, and the answer reaches the model", async () => {
    const human = new ScriptedChannel({
      clarification: [{ choice: "answer", text: "just multiply 6 by 7" }],
    });
    const { loop, transport } = h.loop(
      {
        perception: [snap(), achieved("42")],
        decision: [junk, junk, junk, junk, code(PLAN, 0, "return await multiply(6, 7)")],
      },
      {},
      { human },
    );
    const s = await loop.run("6 times 7");
    expect(s.status).toBe("succeeded");
    expect(s.state.human_inputs[0]).toMatchObject({ kind: "clarification", answer: "just multiply 6 by 7" });
    expect(s.state.human_inputs[0]!.question).toMatch(/could not give a usable next step twice/);
    expect(transport.calls.filter((c) => c.role === "decision").at(-1)!.prompt).toMatch(
      /The human says how to go on: just multiply 6 by 7/,
    );
  });

  it("unusable twice with no one to ask: the session fails with the typed error, never a crash or a silent NOP", async () => {
    const { loop } = h.loop({ perception: [snap()], decision: [junk, junk, junk, junk] });
    const s = await loop.run("6 times 7");
    expect(s.status).toBe("failed");
    expect(s.status_reason).toMatch(/MODEL_INVALID_OUTPUT|could not|JSON/i);
    expect(s.steps).toHaveLength(0);
  });

  it("a perception reply still unusable after its repair round is asked for once more", async () => {
    const { loop } = h.loop({ perception: [junk, junk, achieved("hello")] });
    const s = await loop.run("hello");
    expect(s).toMatchObject({ status: "succeeded", state: { final_answer: "hello" } });
  });

  it("a reply unusable after its repair round was paid for: its calls, tokens and cost are in the usage", async () => {
    const price = { input_per_mtok: 1, output_per_mtok: 10 };
    const { loop, transport } = h.loop({ perception: [junk, junk, achieved("hello")] }, {}, {}, price);
    const s = await loop.run("hello");
    expect(s.status).toBe("succeeded");
    const calls = h.store.llmCalls(s.session_id);
    expect(calls.map((c) => [c.ok, c.attempts])).toEqual([
      [false, 2],
      [true, 1],
    ]);
    // Every turn the model was sent counts: the two of the failed call as well as the good one.
    expect(transport.calls).toHaveLength(3);
    expect(calls[0]!.input_tokens).toBeGreaterThan(0);
    expect(calls[0]!.output_tokens).toBeGreaterThan(0);
    const sum = (f: (c: (typeof calls)[number]) => number) => calls.reduce((n, c) => n + f(c), 0);
    expect(s.usage).toMatchObject({
      llm_calls: 3,
      input_tokens: sum((c) => c.input_tokens),
      output_tokens: sum((c) => c.output_tokens),
      tokens: sum((c) => c.input_tokens + c.output_tokens),
    });
    expect(s.usage.cost_usd).toBeCloseTo((s.usage.input_tokens * 1 + s.usage.output_tokens * 10) / 1e6, 12);
  });

  it("the tokens of a failed call can use up the token budget", async () => {
    // One token allowed: the first call (unusable after its repair round) spends it, so the loop asks no more.
    const { loop, transport } = h.loop({ perception: [junk, junk] }, { budgets: { max_tokens: 1 } as never });
    const s = await loop.run("hello");
    expect(transport.unconsumed()).toEqual({});
    expect([s.status, s.status_reason]).toEqual(["budget_exhausted", "reached the token budget (1 tokens)"]);
    expect(s.usage.tokens).toBeGreaterThan(1);
  });
});
