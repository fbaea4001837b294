/**
 * A fake Gemini "agent" for batch tests and the bench: it answers perception and decision requests for
 * queries of the form "What is A + B?" by planning one CODE step `add(A, B)` and judging the result, the
 * way a real model would, so the real loop, sandbox, math server and store all run. Faults are injected
 * by a caller-supplied function of the request number.
 */
import type { FakeGeminiHandler, FakeGeminiReply, FakeGeminiRequest } from "../../testing/index.js";

export function queryOf(req: FakeGeminiRequest): string {
  return /Original request[^:\n]*:\n(.+)\n/.exec(req.userText)?.[1]?.trim() ?? "";
}

function operands(query: string): [number, number] | null {
  const m = /What is (-?\d+) \+ (-?\d+)/.exec(query);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

function perception(achieved: boolean, summary: string) {
  return {
    entities: [],
    result_requirement: "the sum",
    original_goal_achieved: achieved,
    reasoning: achieved ? "the tool returned the sum" : "nothing computed yet",
    local_goal_achieved: achieved,
    local_reasoning: achieved ? "the step returned the sum" : "no step yet",
    last_tooluse_summary: achieved ? "add" : "none",
    solution_summary: summary,
    confidence: achieved ? 0.9 : 0.5,
  };
}

export interface FakeAgentOptions {
  /** A fault for request n (1-based), or undefined for a normal answer. */
  fault?: (req: FakeGeminiRequest) => FakeGeminiReply | undefined;
  /** Latency of every normal answer. */
  delayMs?: number;
  /** Queries (by text) answered with a NOP question instead of a plan. */
  ask?: (query: string) => boolean;
}

export function fakeAgent(options: FakeAgentOptions = {}): FakeGeminiHandler {
  return (req) => {
    const fault = options.fault?.(req);
    if (fault) return fault;
    const delayMs = options.delayMs;
    const query = queryOf(req);
    const ops = operands(query);
    if (/judge of a batch evaluation/.test(req.systemText)) {
      const expected = /Expected answer:\n(.+)\n/.exec(req.userText)?.[1]?.trim();
      const output = /The agent's answer:\n(.+)\n/.exec(req.userText)?.[1]?.trim();
      return { json: { correct: expected === output, reason: "compared" }, delayMs };
    }
    if (req.role === "perception") {
      const sum = ops ? ops[0] + ops[1] : NaN;
      const saw = /Mode: step_result/.test(req.userText) && new RegExp(`ok: ${sum}\\b`).test(req.userText);
      return {
        json: perception(saw, saw ? String(sum) : "not ready yet"),
        usage: { input: 100, output: 30 },
        delayMs,
      };
    }
    if (options.ask?.(query)) {
      return {
        json: {
          plan_text: ["Step 0: ask"],
          step_index: 0,
          description: "ask",
          type: "NOP",
          question: "Which numbers?",
        },
        delayMs,
      };
    }
    return {
      json: {
        plan_text: ["Step 0: add the two numbers", "Step 1: answer"],
        step_index: 0,
        description: "add",
        type: "CODE",
        code: ops ? `return await add(${ops[0]}, ${ops[1]});` : "return await add(1, 'x');",
      },
      usage: { input: 200, output: 50 },
      delayMs,
    };
  };
}
