/** The loop asking a human: each question kind on the scripted channel, pause and resume, the approval gate. */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Profile } from "../../config/index.js";
import { DEFAULT_CONFIG_DIR } from "../../core/index.js";
import { PolicyChannel, ScriptedChannel, type HumanChannel, type ScriptFile } from "../../hil/index.js";
import { ScriptedTransport, StructuredProvider } from "../../llm/index.js";
import { MultiMCP } from "../../mcp_servers/index.js";
import { AgentLoop } from "../kernel/index.js";
import { achieved, code, snap, startHarness, type Harness } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h.close());

const PLAN = ["Step 0: compute", "Step 1: answer"];
const oneAttempt = { budgets: { max_attempts_per_step: 1 } } as never;
const answers = (script: ScriptFile) => new ScriptedChannel(script);

describe("the loop asks a human", () => {
  it("asks a NOP's question, keeps the answer beside the query and shows it to the model", async () => {
    const human = answers({ clarification: [{ choice: "answer", text: "Celsius, please" }] });
    const { loop, transport } = h.loop(
      {
        perception: [snap(), achieved("30 °F is about -1.1 °C")],
        decision: [
          {
            plan_text: ["Step 0: ask the unit", "Step 1: convert"],
            step_index: 0,
            description: "ask",
            type: "NOP",
            question: "Which unit?",
          },
          code(["Step 0: ask the unit", "Step 1: convert"], 1, "return await divide((30 - 32) * 5, 9)"),
        ],
      },
      {},
      { human },
    );
    const s = await loop.run("convert 30 degrees");
    expect(s.status).toBe("succeeded");
    expect(s.original_query).toBe("convert 30 degrees");
    expect(s.state.human_inputs).toMatchObject([
      { kind: "clarification", question: "Which unit?", answer: "Celsius, please", answered_by: "scripted" },
    ]);
    expect(s.steps[0]).toMatchObject({ type: "NOP", status: "completed", human_input: "Celsius, please" });
    const second = transport.calls.filter((c) => c.role === "decision")[1]!;
    expect(second.prompt).toMatch(/the human answered: Celsius, please/);
    expect(second.prompt).toMatch(/The human answered your question "Which unit\?"/);
    expect(h.store.getSession(s.session_id).state.human_inputs).toHaveLength(1);
  });

  it("on a failure with attempts used up, the human gives the result and the session finishes with it", async () => {
    const human = answers({ tool_failure: [{ choice: "give_result", value: 31 }] });
    const { loop, transport } = h.loop(
      {
        perception: [snap(), snap(), achieved("31")],
        decision: [code(PLAN, 0, "return await divide(1, 0)")],
      },
      oneAttempt,
      { human },
    );
    const s = await loop.run("What is 32 + 5 - 3 * 2");
    expect(s).toMatchObject({ status: "succeeded", state: { final_answer: "31" } });
    expect(s.steps[0]!.execution_result).toMatchObject({ ok: true, value: 31 });
    expect(s.state.human_inputs[0]).toMatchObject({ kind: "tool_failure", answer: "give_result: 31" });
    expect(transport.calls.at(-1)!.prompt).toMatch(/ok: 31/);
  });

  it("edit the code: the person's code runs as a new attempt of the same step", async () => {
    const human = answers({ tool_failure: [{ choice: "edit_code", code: "return await divide(10, 2)" }] });
    const { loop } = h.loop(
      {
        perception: [snap(), snap(), achieved("5")],
        decision: [code(PLAN, 0, "return await divide(10, 0)")],
      },
      oneAttempt,
      { human },
    );
    const s = await loop.run("10 / 2");
    expect(s.status).toBe("succeeded");
    expect(s.steps.map((st) => [st.plan_step, st.attempts, st.status, st.code])).toEqual([
      [0, 1, "failed", "return await divide(10, 0)"],
      [0, 2, "completed", "return await divide(10, 2)"],
    ]);
  });

  it("skip the step: the decision is told and goes on", async () => {
    const human = answers({ tool_failure: [{ choice: "skip" }] });
    const { loop, transport } = h.loop(
      {
        perception: [snap(), snap()],
        decision: [
          code(PLAN, 0, "return await factorial(-1)"),
          { plan_text: PLAN, step_index: 1, description: "answer", type: "CONCLUDE", conclusion: "skipped" },
        ],
      },
      oneAttempt,
      { human },
    );
    const s = await loop.run("factorial of -1");
    expect(s.steps[0]!.status).toBe("skipped");
    expect(s.status).toBe("succeeded");
    expect(transport.calls.at(-1)!.prompt).toMatch(/The human chose to skip step 0/);
  });

  it("abort ends the session as aborted", async () => {
    const { loop } = h.loop(
      { perception: [snap(), snap()], decision: [code(PLAN, 0, "return await divide(1, 0)")] },
      oneAttempt,
      { human: answers({ tool_failure: [{ choice: "abort" }] }) },
    );
    const s = await loop.run("1/0");
    expect(s.status).toBe("aborted");
  });

  it("a policy never blocks: policy:fail ends a NOP session as failed at once", async () => {
    const { loop } = h.loop(
      {
        perception: [snap()],
        decision: [
          { plan_text: ["Step 0: ask"], step_index: 0, description: "ask", type: "NOP", question: "Which?" },
        ],
      },
      {},
      { human: new PolicyChannel("fail") },
    );
    const s = await loop.run("which one");
    expect(s.status).toBe("failed");
    expect(s.state.human_inputs[0]).toMatchObject({ answered_by: "policy:fail" });
  });

  it("defer pauses with the typed question; resume asks it again and continues the same step", async () => {
    const first = h.loop(
      { perception: [snap(), snap()], decision: [code(PLAN, 0, "return await divide(1, 0)")] },
      oneAttempt,
      { human: new PolicyChannel("defer") },
    );
    const paused = await first.loop.run("What is 32 + 5 - 3 * 2");
    expect(paused.status).toBe("awaiting_human");
    expect(paused.pending_human).toMatchObject({ kind: "tool_failure", step_index: 0 });
    // A new loop (as after a restart) reads the session back from the store.
    const stored = h.store.getSession(paused.session_id);
    const second = h.loop({ perception: [achieved("31")] }, oneAttempt, {
      human: answers({ tool_failure: [{ choice: "give_result", value: 31 }] }),
    });
    const s = await second.loop.resume(stored);
    expect(s).toMatchObject({
      session_id: paused.session_id,
      status: "succeeded",
      state: { final_answer: "31" },
    });
    expect(s.steps).toHaveLength(1);
    expect(s.state.human_inputs.map((x) => x.answered_by)).toEqual(["policy:defer", "scripted"]);
    expect(h.store.getSession(paused.session_id).status).toBe("succeeded");
  });
});

describe("a resumed session", () => {
  it("sees the guarded query and memory like the run it continues; memory is read once per drive", async () => {
    let statsReads = 0;
    const memory = { recall: () => "Past sessions: MEMORY-HIT\n", toolStats: () => (statsReads++, "") };
    const nop = {
      plan_text: ["Step 0: ask", "Step 1: answer"],
      step_index: 0,
      description: "ask",
      type: "NOP",
      question: "Which account?",
    };
    const profile = { blocklist: ["password"] } as never;
    const first = h.loop({ perception: [snap()], decision: [nop] }, profile, {
      human: new PolicyChannel("defer"),
      memory,
    });
    const paused = await first.loop.run("my password is hunter2, which account uses it?");
    expect(paused.status).toBe("awaiting_human");
    expect(statsReads).toBe(1);

    const second = h.loop(
      {
        decision: [
          {
            plan_text: ["Step 0: ask", "Step 1: answer"],
            step_index: 1,
            description: "answer",
            type: "CONCLUDE",
            conclusion: "the work one",
          },
        ],
      },
      profile,
      { human: answers({ clarification: [{ choice: "answer", text: "work" }] }), memory },
    );
    const s = await second.loop.resume(h.store.getSession(paused.session_id));
    expect(s.status).toBe("succeeded");
    const prompt = second.transport.calls[0]!.prompt;
    expect(prompt).toMatch(/\[removed\]/);
    expect(prompt).not.toMatch(/password is/);
    expect(prompt).toMatch(/MEMORY-HIT/);
    expect(statsReads).toBe(2);
  });
});

describe("the approval gate", () => {
  let hub: MultiMCP;
  beforeAll(async () => {
    hub = await MultiMCP.start({
      servers: [
        {
          id: "math",
          command: process.execPath,
          args: [join(DEFAULT_CONFIG_DIR, "../dist/mcp_servers/math/server.js")],
          needs_approval: ["multiply"],
        },
      ],
    });
  });
  afterAll(async () => hub.close());

  function loopWith(
    human: HumanChannel,
    source: string,
    profile: Record<string, unknown> = {},
    perception = [snap(), achieved("done")],
  ) {
    const transport = new ScriptedTransport({ perception, decision: [code(PLAN, 0, source)] });
    const model = new StructuredProvider(transport);
    return new AgentLoop({
      models: { perception: model, decision: model },
      host: hub,
      recorder: h.store,
      profile: Profile.parse(profile),
      human,
    });
  }

  it("deny: the call fails with TOOL_DENIED inside the step, and no call reaches the server", async () => {
    const human = answers({ approval: [{ choice: "deny" }] });
    const s = await loopWith(human, "try { return await multiply(6, 7) } catch (e) { return e.code }").run(
      "6*7",
    );
    expect(s.steps[0]!.execution_result!.value).toBe("TOOL_DENIED");
    expect(s.usage.tool_calls).toBe(1);
    expect(h.store.toolCalls({ session_id: s.session_id })[0]).toMatchObject({
      ok: false,
      error_kind: "TOOL_DENIED",
    });
  });

  it("allow always: asked once for the session, then not again", async () => {
    const human = answers({ approval: [{ choice: "allow_always" }] });
    const s = await loopWith(
      human,
      "const a = await multiply(6, 7); const b = await multiply(a, 2); return b",
    ).run("6*7*2");
    expect(s.steps[0]!.execution_result).toMatchObject({ ok: true, value: 84 });
    expect(s.state.human_inputs).toHaveLength(1);
    expect(human.unconsumed()).toEqual([]);
  });

  it("code that spins while an approval is open still times out (policy:fail, and a person slow to answer)", async () => {
    const never: HumanChannel = { name: "scripted", ask: () => new Promise(() => {}) };
    for (const human of [new PolicyChannel("fail"), never]) {
      // One step: the loop stops on the step budget instead of replanning after the timeout.
      const s = await loopWith(
        human,
        "const p = multiply(6, 7); await null; while (true) {}",
        { sandbox: { timeout_ms: 300 }, budgets: { max_steps: 1 } },
        [snap()],
      ).run("6*7");
      expect(s.steps[0]!.execution_result?.error?.code).toBe("SANDBOX_TIMEOUT");
      expect(s.status).toBe("budget_exhausted");
    }
  });

  it("a person thinking over an approval does not use up the step's time limit or the session's", async () => {
    // Answers after 6 s, while the step may run 4 s and the session 5 s of wall time: the person's time alone
    // is over both, and the rest of the session (under load in CI: a few seconds) has room within them.
    const slow: HumanChannel = {
      name: "scripted",
      ask: async (q) => {
        await new Promise((r) => setTimeout(r, 6000));
        return answers({ approval: [{ choice: "allow_once" }] }).ask(q);
      },
    };
    const s = await loopWith(slow, "return await multiply(6, 7)", {
      sandbox: { timeout_ms: 4000 },
      budgets: { max_wall_ms: 5000 },
    }).run("6*7");
    expect(s.steps[0]!.execution_result).toMatchObject({ ok: true, value: 42 });
    expect(s.status).toBe("succeeded");
  });
});
