/**
 * Two sessions in one process, as in a batch (issue #24): one's CODE step spins without awaiting, and the
 * other's model calls and tool calls go on and finish meanwhile, since the step runs in its engine's thread.
 * Asserted by the order of the sessions' events, not by time.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LoopEvent } from "../index.js";
import { achieved, code, snap, startHarness, type Harness } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h.close());

const PLAN = ["Step 0: compute", "Step 1: answer"];

async function until(what: string, check: () => boolean, withinMs = 40_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("a CODE step that spins", () => {
  it("does not hold up another session's model and tool calls", async () => {
    const events: string[] = [];
    const cancel = new AbortController();
    const spinner = h.loop(
      { perception: [snap()], decision: [code(PLAN, 0, "console.log('spinning');\nwhile (true) {}")] },
      // Long enough that, were the step on this thread, the other session could not start before it ends.
      { sandbox: { timeout_ms: 30_000 } } as never,
      {
        signal: cancel.signal,
        onEvent: (e: LoopEvent) => {
          if (e.type === "log") events.push(`spinner: ${e.line}`);
          if (e.type === "step_end") events.push("spinner: step ended");
        },
      },
    );
    const other = h.loop(
      { perception: [snap(), achieved("6")], decision: [code(PLAN, 0, "return await multiply(2, 3)")] },
      {},
      {
        onEvent: (e: LoopEvent) => {
          if (e.type === "model_end") events.push(`other: ${e.role} ${e.ok ? "ok" : "failed"}`);
          if (e.type === "tool_call") events.push(`other: ${e.record.tool} ${e.record.ok ? "ok" : "failed"}`);
        },
      },
    );
    const spinning = spinner.loop.run("spin").then((s) => {
      events.push("spinner: ended");
      return s;
    });
    await until("the spinning step did not start", () => events.includes("spinner: spinning"));
    const done = await other.loop.run("2 times 3");
    events.push("other: ended");
    cancel.abort(new Error("the test is over"));
    const spun = await spinning;

    // Everything of the other session happened while the step still spun.
    const otherEnded = events.indexOf("other: ended");
    expect(events.slice(0, otherEnded + 1)).toEqual([
      "spinner: spinning",
      "other: perception ok",
      "other: decision ok",
      "other: multiply ok",
      "other: perception ok",
      "other: ended",
    ]);
    expect(events.slice(otherEnded + 1)).toContain("spinner: ended");
    expect(done).toMatchObject({ status: "succeeded", state: { final_answer: "6" } });
    expect(spun.status).toBe("aborted");
    expect(spun.steps[0]?.execution_result?.error?.code ?? "SANDBOX_CANCELLED").toBe("SANDBOX_CANCELLED");
  });
});
