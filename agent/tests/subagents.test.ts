import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ScriptedTransport, StructuredProvider } from "../../llm/index.js";
import { achieved, code, snap, startHarness, type Harness } from "./harness.js";
import { HangingTransport, subCode, teamRun } from "./team.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h.close());

const TEAM = `
recovery:
  UNKNOWN: "the agent ended without a report: give the same task to agents.backup"
agents:
  boss:
    description: Coordinates arithmetic helpers.
    subagents: [adder, multiplier, counter, backup, sleeper]
    handoffs: [helper]
  adder:
    description: Adds two numbers with math.add.
    tools: [math.add]
    result:
      error_codes: [ADD_FAILED]
      fields:
        operands: { type: array, description: the numbers added }
    recovery:
      ADD_FAILED: check the operands and call adder again
  multiplier:
    description: Multiplies two numbers.
    tools: [math.multiply]
    result: { error_codes: [MULTIPLY_FAILED] }
  counter:
    description: Counts by adding one at a time (a tiny budget).
    tools: [math.add]
    budgets: { max_steps: 1 }
  backup:
    description: Does any arithmetic.
    tools: ["math.*"]
  sleeper:
    description: Never answers.
  helper:
    description: Answers multiplication questions.
    tools: [math.multiply]
`;

const PLAN = ["Step 0: delegate to the agents", "Step 1: answer"];

describe("sub-agents", () => {
  it("a parent calls two sub-agents in parallel; each runs its own narrow loop and returns only its report", async () => {
    const { loop, transport, events } = teamRun(h, TEAM, "boss", {
      perception: [snap(), achieved("5 and 42")],
      decision: [
        code(
          PLAN,
          0,
          `const [a, m] = await parallel([
             () => agents.adder({task: "add 2 and 3", a: 2, b: 3}),
             () => agents.multiplier({task: "multiply 6 by 7"}),
           ]);
           return {a, m};`,
        ),
      ],
      "adder.perception": [snap()],
      "adder.decision": [
        subCode(
          `const r = await add(2, 3);
           await agent.report({success: true, error_code: "NONE", reason: "added", result: r, operands: [2, 3]});
           return r;`,
        ),
      ],
      "multiplier.perception": [snap()],
      "multiplier.decision": [
        subCode(
          `const r = await multiply(6, 7);
           await agent.report({success: true, error_code: "NONE", reason: "multiplied", result: r});`,
        ),
      ],
    });
    const s = await loop.run("What are 2 + 3 and 6 * 7?");
    expect([s.status, s.status_reason, JSON.stringify(s.steps[0]?.execution_result?.error)]).toEqual([
      "succeeded",
      undefined,
      undefined,
    ]);
    expect(transport.unconsumed()).toEqual({});

    // The parent sees the reports, not the traces.
    const { a, m } = s.steps[0]!.execution_result!.value as Record<string, Record<string, unknown>>;
    expect(a).toMatchObject({
      success: true,
      error_code: "NONE",
      reason: "added",
      result: 5,
      operands: [2, 3],
    });
    expect(a).toMatchObject({ tool_calls_used: 1 });
    expect(m).toMatchObject({ success: true, error_code: "NONE", result: 42, tool_calls_used: 1 });
    expect(Object.keys(a!).sort()).toEqual(
      ["error_code", "operands", "reason", "result", "session_id", "success", "tool_calls_used"].sort(),
    );
    expect(s.usage.tool_calls).toBe(0);

    // Both ran at once: both started before either ended.
    const order = events
      .filter((e) => e.type === "agent_start" || e.type === "agent_end")
      .map((e) => `${e.type}:${(e as { agent: string }).agent}`);
    expect(order.slice(0, 2).sort()).toEqual(["agent_start:adder", "agent_start:multiplier"]);
    expect(order.slice(2).sort()).toEqual(["agent_end:adder", "agent_end:multiplier"]);

    // Both sessions are logged and linked to the parent, with their reports and their own tool calls.
    const children = h.store.childSessions(s.session_id);
    expect(children.map((c) => [c.agent, c.status]).sort()).toEqual([
      ["adder", "succeeded"],
      ["multiplier", "succeeded"],
    ]);
    const adderSession = h.store.getSession(a!.session_id as string);
    expect(adderSession).toMatchObject({ parent_session_id: s.session_id, agent: "adder" });
    expect(adderSession.report).toMatchObject({ success: true, error_code: "NONE", result: 5 });
    expect(h.store.toolCalls({ session_id: adderSession.session_id }).map((c) => c.tool)).toEqual(["add"]);
    // What each call spent (its own perception and decision calls), for batch totals.
    for (const c of s.agent_calls ?? [])
      expect(c).toMatchObject({ llm_calls: 2, tokens: expect.any(Number) });
    expect(
      h.store
        .getSession(s.session_id)
        .agent_calls?.map((c) => [c.agent, c.via, c.error_code])
        .sort(),
    ).toEqual([
      ["adder", "call", "NONE"],
      ["multiplier", "call", "NONE"],
    ]);

    // What each model was shown: the parent gets the agents and their contracts; a sub-agent its narrow tools,
    // its task and arguments, and how to report.
    const bossDecision = transport.calls.find((c) => c.role === "decision")!;
    expect(bossDecision.system).toMatch(/agents\.adder\(\{task, \.\.\.\}\) — Adds two numbers/);
    expect(bossDecision.system).toMatch(/error_code: NONE \(success\) \| ADD_FAILED \| UNKNOWN/);
    expect(bossDecision.system).toMatch(/operands \(array\): the numbers added/);
    expect(bossDecision.system).toMatch(/ADD_FAILED → check the operands/);
    expect(bossDecision.system).toMatch(/UNKNOWN → the agent ended without a report/);
    const adderDecision = transport.calls.find((c) => c.role === "adder.decision")!;
    expect(adderDecision.system).toMatch(/add\(a: number, b: number\)/);
    expect(adderDecision.system).not.toMatch(/multiply\(a: number/);
    expect(adderDecision.system).toMatch(
      /agent\.report\(\{success, error_code, reason, result, operands\}\)/,
    );
    expect(adderDecision.system).toMatch(/You are agent "adder"/);
    expect(adderDecision.prompt).toMatch(
      /add 2 and 3\n\nArguments from the caller \(JSON\): \{"a":2,"b":3\}/,
    );
    const adderPerception = transport.calls.find((c) => c.role === "adder.perception")!;
    expect(adderPerception.system).toMatch(/keep `original_goal_achieved` false/);
  });

  it("a sub-agent that exhausts its budget returns UNKNOWN with the reason, and the parent recovers", async () => {
    const { loop, transport } = teamRun(h, TEAM, "boss", {
      perception: [
        snap(),
        snap({ local_goal_achieved: false, local_reasoning: "counter ended with UNKNOWN" }),
        achieved("3"),
      ],
      decision: [
        code(PLAN, 0, `return await agents.counter({task: "count to three"});`),
        code(
          PLAN,
          0,
          `const r = await agents.backup({task: "count to three"});
           return r.success ? r.result : r;`,
        ),
      ],
      "counter.perception": [snap()],
      // One step, no report; the budget (max_steps 1) ends the session before it can do more.
      "counter.decision": [subCode("return await add(0, 1);", "count the first one")],
      "backup.perception": [snap()],
      "backup.decision": [
        subCode(
          `let n = 0;
           for (let i = 0; i < 3; i++) n = await add(n, 1);
           await agent.report({success: true, error_code: "NONE", reason: "counted to three", result: n});`,
        ),
      ],
    });
    const s = await loop.run("Count to three");
    expect(transport.unconsumed()).toEqual({});
    expect(s.status).toBe("succeeded");
    expect(s.state.final_answer).toBe("3");

    const first = s.steps[0]!.execution_result!.value as Record<string, unknown>;
    expect(first).toMatchObject({ success: false, error_code: "UNKNOWN", result: null, tool_calls_used: 1 });
    expect(first.reason).toMatch(/^budget_exhausted: reached the step budget \(1 steps\)/);
    const counter = h.store.getSession(first.session_id as string);
    expect(counter).toMatchObject({
      status: "budget_exhausted",
      agent: "counter",
      parent_session_id: s.session_id,
    });
    expect(counter.report).toBeUndefined();

    // The replan saw the typed failure and the recovery table, and routed to the other agent.
    const replan = transport.calls.filter((c) => c.role === "decision")[1]!;
    expect(replan.prompt).toMatch(
      /success: false, error_code UNKNOWN, "budget_exhausted: reached the step budget/,
    );
    expect(replan.system).toMatch(
      /UNKNOWN → the agent ended without a report: give the same task to agents\.backup/,
    );
    expect(s.steps[1]!.execution_result).toMatchObject({ ok: true, value: 3 });
    expect(s.agent_calls?.map((c) => [c.agent, c.error_code, c.success])).toEqual([
      ["counter", "UNKNOWN", false],
      ["backup", "NONE", true],
    ]);
  });

  it("a tool outside a sub-agent's allowlist is refused inside it: by the code guard, and as a typed ToolError", async () => {
    const { loop, transport } = teamRun(h, TEAM, "boss", {
      perception: [snap(), achieved("refused")],
      decision: [
        code(PLAN, 0, `return await agents.adder({task: "multiply 2 by 3"});`),
        // The boss's step fails (its result reports a failure), so it decides again: it concludes.
        { plan_text: PLAN, step_index: 1, description: "answer", type: "CONCLUDE", conclusion: "refused" },
      ],
      "adder.perception": [snap()],
      "adder.decision": [
        subCode("return await multiply(2, 3);"),
        subCode(
          `try {
             return await callTool(["math", "multiply"].join("."), {a: 2, b: 3});
           } catch (e) {
             await agent.report({success: false, error_code: "ADD_FAILED", reason: e.code + ": " + e.message});
             return e.code;
           }`,
        ),
      ],
    });
    const s = await loop.run("Multiply 2 by 3 with the adder");
    expect(transport.unconsumed()).toEqual({});
    expect([s.status, s.state.final_answer]).toEqual(["succeeded", "refused"]);
    expect(s.steps[0]).toMatchObject({ status: "failed", error: { code: "GUARD_RESULT_ERROR_FIELD" } });
    const report = s.steps[0]!.execution_result!.value as Record<string, unknown>;
    expect(report).toMatchObject({ success: false, error_code: "ADD_FAILED" });
    expect(report.reason).toMatch(
      /^TOOL_NOT_ALLOWED: math\.multiply is not one of agent "adder"'s tools \(it may use: math\.add\)/,
    );

    const adder = h.store.getSession(report.session_id as string);
    // First attempt: the guard refused the code before it ran, and said why.
    expect(adder.steps[0]).toMatchObject({ status: "failed", error: { code: "GUARD_CODE_UNKNOWN_TOOL" } });
    expect(adder.steps[0]!.error!.message).toMatch(/multiply/);
    const retry = transport.calls.filter((c) => c.role === "adder.decision")[1]!;
    expect(retry.prompt).toMatch(/the code was not run/);
    // Second: the computed name reached the narrow host, which refused it; the refusal is logged.
    expect(adder.status).toBe("failed");
    expect(h.store.toolCalls({ session_id: adder.session_id })).toMatchObject([
      { server: "math", tool: "multiply", ok: false, error_kind: "TOOL_NOT_ALLOWED" },
    ]);
  });

  it("reports are checked against the contract; agents.list shows each agent's last status", async () => {
    const { loop, transport } = teamRun(h, TEAM, "boss", {
      perception: [snap(), achieved("done")],
      decision: [
        code(
          PLAN,
          0,
          `const before = (await agents.list()).find((a) => a.name === "adder");
           const r = await agents.adder("add 1 and 1");
           const after = (await agents.list()).find((a) => a.name === "adder");
           return {before, r, after};`,
        ),
      ],
      "adder.perception": [snap()],
      "adder.decision": [
        subCode(
          `const errors = [];
           for (const bad of [{success: true, error_code: "ADD_FAILED", reason: "x"},
                              {success: true, error_code: "NOPE", reason: "x"},
                              {success: true, error_code: "NONE", reason: "x", extra: 1}]) {
             try { await agent.report(bad); } catch (e) { errors.push(e.code + ": " + e.message); }
           }
           await agent.report({success: true, error_code: "NONE", reason: "added", result: await add(1, 1)});
           try { await agent.report({success: true, error_code: "NONE", reason: "again"}); } catch (e) { errors.push(e.code); }
           console.log(JSON.stringify(errors));`,
        ),
      ],
    });
    const s = await loop.run("add 1 and 1");
    expect(transport.unconsumed()).toEqual({});
    const { before, r, after } = s.steps[0]!.execution_result!.value as Record<
      string,
      Record<string, unknown>
    >;
    expect(before).toMatchObject({ name: "adder", status: "idle", calls: 0, running: 0, last: null });
    expect(before!.error_codes).toEqual(["NONE", "ADD_FAILED", "UNKNOWN"]);
    expect(r).toMatchObject({ success: true, result: 2 });
    expect(after).toMatchObject({
      status: "succeeded",
      calls: 1,
      last: { error_code: "NONE", reason: "added" },
    });
    const adder = h.store.getSession(r!.session_id as string);
    const errors = JSON.parse(adder.steps[0]!.execution_result!.logs[0]!) as string[];
    expect(errors[0]).toMatch(
      /^REPORT_INVALID: agent\.report: .*error_code: a successful report has error_code "NONE"/,
    );
    expect(errors[1]).toMatch(/^REPORT_INVALID: .*error_code: Invalid option/);
    expect(errors[2]).toMatch(/^REPORT_INVALID: .*extra/);
    expect(errors[3]).toBe("REPORT_ALREADY_FILED");
  });

  it("agents.send times out cleanly: a typed AGENT_TIMEOUT, the sub-agent cancelled and its session closed", async () => {
    const hanging = new HangingTransport();
    const slow = new StructuredProvider(hanging);
    const { loop, transport } = teamRun(
      h,
      TEAM,
      "boss",
      {
        perception: [snap(), achieved("timed out")],
        decision: [
          code(
            PLAN,
            0,
            `const out = {};
             try { await agents.send("sleeper", "wait for me", {timeout_ms: 150}); out.sent = "answered"; }
             catch (e) { out.timeout = {code: e.code, tool: e.tool, message: e.message}; }
             try { await agents.send({name: "nobody", message: "hi"}); } catch (e) { out.unknown = e.code + ": " + e.message; }
             try { await agents.send("sleeper", "x", {timeout_ms: -1}); } catch (e) { out.bad = e.code; }
             return out;`,
          ),
        ],
      },
      { team: { modelFor: (a) => (a.name === "sleeper" ? slow : undefined) } },
    );
    const s = await loop.run("ask the sleeper");
    expect(transport.unconsumed()).toEqual({});
    expect(s.status).toBe("succeeded");
    const out = s.steps[0]!.execution_result!.value as Record<
      string,
      { code: string; message: string } | string
    >;
    expect(out.sent).toBeUndefined();
    expect(out.timeout).toMatchObject({ code: "AGENT_TIMEOUT", tool: "agents.send" });
    expect((out.timeout as { message: string }).message).toMatch(
      /agent "sleeper" did not report within 150 ms; it was cancelled \(session /,
    );
    expect(out.unknown).toMatch(/^AGENT_NOT_FOUND: .*no agent "nobody" to send to/);
    expect(out.bad).toBe("TOOL_INVALID_ARGS");
    // The model call was made with the sub-agent's role and aborted; the session ended aborted (cancelled from outside) and is linked.
    expect(hanging.turns.map((t) => [t.role, t.signal?.aborted])).toEqual([["sleeper.perception", true]]);
    const [child] = h.store.childSessions(s.session_id);
    expect(child).toMatchObject({ agent: "sleeper", status: "aborted" });
    expect(child!.status_reason).toMatch(/cancelled/);
    expect(s.agent_calls).toMatchObject([
      { agent: "sleeper", via: "send", timed_out: true, success: false, error_code: "UNKNOWN" },
    ]);
  });
});

describe("nested sub-agents", () => {
  const NESTED = `
agents:
  top: { description: asks mid, subagents: [mid] }
  mid: { description: asks leaf and reports, subagents: [leaf] }
  leaf: { description: adds, tools: [math.add] }
`;
  it("a sub-agent may call its own sub-agents; sessions link as a tree and spending adds up", async () => {
    const { loop, transport } = teamRun(h, NESTED, "top", {
      perception: [snap(), achieved("2")],
      decision: [code(PLAN, 0, `return await agents.mid({task: "get 1 + 1 from leaf"});`)],
      "mid.perception": [snap()],
      "mid.decision": [
        subCode(
          `const r = await agents.leaf({task: "add 1 and 1"});
           await agent.report({success: r.success, error_code: r.success ? "NONE" : "UNKNOWN", reason: "leaf said: " + r.reason, result: r.result});`,
        ),
      ],
      "leaf.perception": [snap()],
      "leaf.decision": [
        subCode(
          `await agent.report({success: true, error_code: "NONE", reason: "added", result: await add(1, 1)});`,
        ),
      ],
    });
    const s = await loop.run("1 + 1 via two levels");
    expect(transport.unconsumed()).toEqual({});
    expect(s.steps[0]!.execution_result!.value).toMatchObject({
      success: true,
      reason: "leaf said: added",
      result: 2,
    });
    const [mid] = h.store.childSessions(s.session_id);
    const [leaf] = h.store.childSessions(mid!.session_id);
    expect([mid!.agent, leaf!.agent]).toEqual(["mid", "leaf"]);
    expect(s.agent_calls).toMatchObject([{ agent: "mid", llm_calls: 4, tool_calls_used: 0 }]);
    expect(h.store.getSession(mid!.session_id).agent_calls).toMatchObject([
      { agent: "leaf", llm_calls: 2, tool_calls_used: 1 },
    ]);
  });
});

describe("agent settings over the caller's", () => {
  it("an agent's memory_hits gives it its own memory; without it, the caller's", async () => {
    const yaml = `
agents:
  root: { description: r, subagents: [forgetful, plain] }
  forgetful: { description: f, tools: [math.add], memory_hits: 0 }
  plain: { description: p, tools: [math.add] }
`;
    const asked: number[] = [];
    const memory = (text: string) => ({ recall: () => text, toolStats: () => "" });
    const report = subCode(
      `await agent.report({success: true, error_code: "NONE", reason: "ok", result: await add(1, 1)});`,
    );
    const { loop, transport } = teamRun(
      h,
      yaml,
      "root",
      {
        perception: [snap(), achieved("done")],
        decision: [
          code(
            PLAN,
            0,
            `return [await agents.forgetful("add"), await agents.plain("add")].map((r) => r.result);`,
          ),
        ],
        "forgetful.perception": [snap()],
        "forgetful.decision": [report],
        "plain.perception": [snap()],
        "plain.decision": [report],
      },
      {
        deps: { memory: memory("PAST SESSION HINT\n") },
        team: { memory: (hits) => (asked.push(hits), memory(hits ? "PAST SESSION HINT\n" : "")) },
      },
    );
    const s = await loop.run("two additions");
    expect(transport.unconsumed()).toEqual({});
    expect(s.steps[0]!.execution_result!.value).toEqual([2, 2]);
    expect(asked).toEqual([0]);
    const prompt = (role: string) => transport.calls.find((c) => c.role === role)!.prompt;
    expect(prompt("perception")).toMatch(/PAST SESSION HINT/);
    expect(prompt("plain.perception")).toMatch(/PAST SESSION HINT/);
    expect(prompt("forgetful.perception")).not.toMatch(/PAST SESSION HINT/);
  });
});

describe("handoffs", () => {
  it("an agent hands the conversation to another; the session records who held control when", async () => {
    const { loop, transport, events } = teamRun(h, TEAM, "boss", {
      perception: [snap(), achieved("42")],
      decision: [
        code(
          PLAN,
          0,
          `return await agent.handoff({to: "helper", reason: "this is a multiplication question"});`,
        ),
        code(["Step 0: multiply", "Step 1: answer"], 0, "return await multiply(6, 7);"),
      ],
    });
    const s = await loop.run("What is 6 times 7?");
    expect(transport.unconsumed()).toEqual({});
    expect(s.status).toBe("succeeded");
    expect(s.state.final_answer).toBe("42");
    expect(s.agent).toBe("boss");
    expect(s.control).toMatchObject([
      { agent: "boss", since_step: 0 },
      { agent: "helper", since_step: 1, from: "boss", reason: "this is a multiplication question" },
    ]);
    // The helper's plan starts with fresh attempts.
    expect(s.steps.map((st) => [st.index, st.status, st.attempts])).toEqual([
      [0, "completed", 1],
      [1, "completed", 1],
    ]);
    expect(s.plan_versions.at(-1)!.triggered_by).toBe("handoff:step:1");
    expect(h.store.getSession(s.session_id).control).toEqual(s.control);

    // The helper decided with its own prompt and tools, the reason as guidance and the history in view.
    const [bossCall, helperCall] = transport.calls.filter((c) => c.role === "decision");
    expect(bossCall!.system).toMatch(/agent\.handoff\(\{to: "NAME"/);
    expect(bossCall!.system).toMatch(/- helper: Answers multiplication questions/);
    expect(bossCall!.system).not.toMatch(/multiply\(a: number/);
    expect(helperCall!.system).toMatch(/You are agent "helper"/);
    expect(helperCall!.system).toMatch(/multiply\(a: number, b: number\)/);
    expect(helperCall!.prompt).toMatch(
      /Agent "boss" handed the conversation to you, agent "helper": this is a multiplication question/,
    );
    expect(events.filter((e) => e.type === "handoff")).toMatchObject([{ from: "boss", to: "helper" }]);
    expect(events.filter((e) => e.type === "session_end")).toHaveLength(1);
  });

  it("a handoff to an agent not in the list is refused inside the code", async () => {
    const { loop, transport } = teamRun(h, TEAM, "boss", {
      perception: [snap(), achieved("no")],
      decision: [
        code(
          PLAN,
          0,
          `try { await agent.handoff({to: "adder", reason: "why not"}); } catch (e) { return e.code + ": " + e.message; }`,
        ),
      ],
    });
    const s = await loop.run("hand over");
    expect(transport.unconsumed()).toEqual({});
    expect(s.steps[0]!.execution_result!.value).toMatch(
      /^AGENT_NOT_FOUND: .*"adder" is not an agent boss may hand over to/,
    );
    expect(s.control).toBeUndefined();
  });
});

describe("planner-coder", () => {
  const PC = `
agents:
  pc:
    description: Plans, then codes.
    tools: ["math.*"]
    decision: planner_coder
`;
  it("splits the decision: the planner writes plan_text and a brief, the coder the step's code", async () => {
    const transport = new ScriptedTransport({
      perception: [snap(), achieved("42")],
      planner: [
        {
          plan_text: ["Step 0: multiply 6 by 7 with the math tools", "Step 1: answer"],
          step_index: 0,
          description: "multiply",
          type: "CODE",
          brief: "call multiply with 6 and 7 and return the product",
        },
      ],
      coder: [{ code: "return await multiply(6, 7);" }],
    });
    const model = new StructuredProvider(transport);
    const { loop } = teamRun(h, PC, "pc", {}, { deps: { models: { perception: model, decision: model } } });
    const s = await loop.run("What is 6 times 7?");
    expect(transport.unconsumed()).toEqual({});
    expect(s.status).toBe("succeeded");
    expect(s.steps[0]).toMatchObject({ type: "CODE", code: "return await multiply(6, 7);" });
    expect(s.plan_versions[0]!.plan_text).toEqual([
      "Step 0: multiply 6 by 7 with the math tools",
      "Step 1: answer",
    ]);
    expect(s.usage.llm_calls).toBe(4);
    const [planner, coder] = transport.calls.filter((c) => c.role === "planner" || c.role === "coder");
    expect(planner!.system).toMatch(/You are the planner/);
    expect(planner!.system).toMatch(/multiply\(a: number, b: number\)/);
    expect(coder!.system).toMatch(/You are the coder/);
    expect(coder!.prompt).toMatch(/Write the code for step 0: multiply/);
    expect(coder!.prompt).toMatch(/call multiply with 6 and 7 and return the product/);
    expect(coder!.prompt).toMatch(/Step 0: multiply 6 by 7 with the math tools/);
    // The planner's call and the coder's are rows of their own in the log, each with the prompt it was sent.
    const calls = h.store.llmCalls(s.session_id);
    expect(calls.map((c) => c.role)).toEqual(["perception", "planner", "coder", "perception"]);
    expect(calls[1]!.prompt).toBe(`${planner!.system}\n${planner!.prompt}`);
    expect(calls[2]!.prompt).toBe(`${coder!.system}\n${coder!.prompt}`);
  });

  it("a coder reply unusable after its repair round is logged as a failed coder call after the planner's", async () => {
    const junk = { raw: "no code today" };
    const plan = {
      plan_text: ["Step 0: multiply", "Step 1: answer"],
      step_index: 0,
      description: "multiply",
      type: "CODE",
      brief: "multiply 6 by 7",
    };
    const transport = new ScriptedTransport({
      perception: [snap()],
      planner: [plan, plan],
      coder: [junk, junk, junk, junk],
    });
    const model = new StructuredProvider(transport);
    const { loop } = teamRun(h, PC, "pc", {}, { deps: { models: { perception: model, decision: model } } });
    const s = await loop.run("What is 6 times 7?");
    expect(transport.unconsumed()).toEqual({});
    expect(s.status).toBe("failed");
    const all = h.store.llmCalls(s.session_id);
    // 1 perception call, then twice a planner call and a coder call of two attempts.
    expect(all.map((c) => [c.role, c.ok, c.attempts])).toEqual([
      ["perception", true, 1],
      ["planner", true, 1],
      ["coder", false, 2],
      ["planner", true, 1],
      ["coder", false, 2],
    ]);
    expect(all[2]!.raw_response).toBe("no code today");
    expect(all[2]!.error).toMatch(/^MODEL_INVALID_OUTPUT: /);
    expect(s.usage.llm_calls).toBe(7);
    expect(s.usage.tokens).toBe(all.reduce((n, c) => n + c.input_tokens + c.output_tokens, 0));
    expect(all[2]!.input_tokens).toBeGreaterThan(0);
  });
});
