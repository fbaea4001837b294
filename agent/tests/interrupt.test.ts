/** Ctrl-C during a model call or code: the loop cancels it and asks whether to go on, pause or abort. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelError, type GenerateRequest, type ModelProvider } from "../../core/index.js";
import { ScriptedChannel, type ScriptFile } from "../../hil/index.js";
import { ScriptedTransport, StructuredProvider, type Script } from "../../llm/index.js";
import type { InterruptSource } from "../kernel/index.js";
import { achieved, code, snap, startHarness, type Harness } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h.close());

const PLAN = ["Step 0: compute", "Step 1: answer"];

/** An interrupt source the test presses, like the CLI's Ctrl-C. */
function ctrlC(): InterruptSource & { press(): void } {
  const listeners = new Set<() => void>();
  return {
    subscribe: (l) => (listeners.add(l), () => listeners.delete(l)),
    press: () => [...listeners].forEach((l) => l()),
  };
}

/** The first decision call hangs until it is cancelled, and Ctrl-C is pressed while it hangs. */
function hangFirstDecision(model: ModelProvider, keys: ReturnType<typeof ctrlC>): ModelProvider {
  let hung = false;
  return {
    provider: model.provider,
    model: model.model,
    generate<T>(req: GenerateRequest<T>) {
      if (req.role !== "decision" || hung) return model.generate(req);
      hung = true;
      return new Promise((_, reject) => {
        req.signal?.addEventListener("abort", () =>
          reject(new ModelError("MODEL_ABORTED", "the call was cancelled")),
        );
        setTimeout(() => keys.press(), 10);
      });
    },
  };
}

function setUp(script: Script, answers: ScriptFile) {
  const keys = ctrlC();
  const human = new ScriptedChannel(answers);
  const scripted = new StructuredProvider(new ScriptedTransport(script));
  const models = { perception: scripted, decision: hangFirstDecision(scripted, keys) };
  const { loop } = h.loop({}, {}, { human, interrupts: keys, models });
  return { loop, keys, human };
}

describe("Ctrl-C in the loop", () => {
  it("go on: the cancelled decision is made again and the session finishes", async () => {
    const { loop, human } = setUp(
      { perception: [snap(), achieved("6")], decision: [code(PLAN, 0, "return await multiply(2, 3)")] },
      { interrupt: [{ choice: "continue" }] },
    );
    const s = await loop.run("2 times 3");
    expect(s).toMatchObject({ status: "succeeded", state: { final_answer: "6" } });
    expect(s.state.human_inputs).toMatchObject([
      { kind: "interrupt", answer: "continue", answered_by: "scripted" },
    ]);
    expect(s.state.human_inputs[0]!.question).toMatch(/during the decision model call/);
    expect(human.unconsumed()).toEqual([]);
    const calls = h.store.llmCalls(s.session_id).map((c) => [c.role, c.ok]);
    expect(calls).toEqual([
      ["perception", true],
      ["decision", false],
      ["decision", true],
      ["perception", true],
    ]);
  });

  it("abort: the session ends aborted", async () => {
    const { loop } = setUp({ perception: [snap()] }, { interrupt: [{ choice: "abort" }] });
    const s = await loop.run("2 times 3");
    expect(s.status).toBe("aborted");
    expect(s.status_reason).toMatch(/abort by scripted/);
  });

  it("pause: awaiting_human with the interrupt question; resume goes on from the last perception", async () => {
    const { loop } = setUp({ perception: [snap()] }, { interrupt: [{ choice: "defer" }] });
    const paused = await loop.run("2 times 3");
    expect(paused).toMatchObject({ status: "awaiting_human", pending_human: { kind: "interrupt" } });
    const again = h.loop(
      { perception: [achieved("6")], decision: [code(PLAN, 0, "return await multiply(2, 3)")] },
      {},
      { human: new ScriptedChannel({ interrupt: [{ choice: "continue" }] }) },
    );
    const s = await again.loop.resume(h.store.getSession(paused.session_id));
    expect(s).toMatchObject({
      session_id: paused.session_id,
      status: "succeeded",
      state: { final_answer: "6" },
    });
    // No plan was made before the pause: the initial decision is made, seeing the interrupt among the answers.
    expect(again.transport.calls[0]!.prompt).toMatch(
      /Mode: initial[\s\S]*interrupted \(Ctrl-C\) during the decision model call/,
    );
  });

  it("during code: the sandbox stops, the step is marked interrupted, and abort ends the session", async () => {
    const keys = ctrlC();
    const { loop } = h.loop(
      { perception: [snap()], decision: [code(PLAN, 0, "await add(1, 1);\nwhile (true) {}")] },
      {},
      {
        human: new ScriptedChannel({ interrupt: [{ choice: "abort" }] }),
        interrupts: keys,
        onEvent: (e) => e.type === "tool_call" && keys.press(),
      },
    );
    const s = await loop.run("spin");
    expect(s.status).toBe("aborted");
    expect(s.steps[0]).toMatchObject({ status: "failed", error: { code: "INTERRUPTED" } });
    expect(s.state.human_inputs[0]!.question).toMatch(/step 0's code/);
  });
});
