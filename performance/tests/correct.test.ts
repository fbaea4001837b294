import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_RETRY, createProvider } from "../../llm/index.js";
import { startFakeGemini, type FakeGemini } from "../../testing/index.js";
import { judgeAnswer, matchExpected } from "../index.js";

describe("matchExpected", () => {
  it.each([
    ["31", "31", true, "exact"],
    ["The answer is 31.", "31", true, "numeric"],
    ["32 + 5 - 3 * 2 = 31", "31", true, "numeric"],
    ["31 is wrong, it is 30", "31", false, "numeric"],
    ["3.14159265", "3.14", true, "numeric"],
    ["3.2", "3.14", false, "numeric"],
    ["3.4", "3", false, "numeric"],
    ["1,234,567", "1234567", true, "numeric"],
    ["0.30000000000000004", "0.3", true, "numeric"],
    ["[0, 1, 1, 2, 3, 5, 8]", "[0,1,1,2,3,5,8]", true, "numeric"],
    ["The numbers are 0, 1, 1, 2, 3, 5 and 8", "[0, 1, 1, 2, 3, 5, 8]", true, "numeric"],
    ["[0, 1, 1, 2]", "[0, 1, 1, 2, 3]", false, "numeric"],
    ["The capital is Paris.", "Paris", true, "phrase"],
    ["Parisian food", "Paris", false, "phrase"],
    ["  PARIS ", "paris", true, "exact"],
  ])("%j vs expected %j → %s (%s)", (output, expected, correct, by) => {
    expect(matchExpected(output, expected)).toMatchObject({ correct, by });
  });

  it("honours a looser tolerance", () => {
    expect(matchExpected("100.5", "100").correct).toBe(false);
    expect(matchExpected("100.5", "100", { tolerance: 0.01 }).correct).toBe(true);
  });
});

describe("judgeAnswer", () => {
  let gemini: FakeGemini | undefined;
  afterEach(async () => gemini?.close());

  it("asks the model through the provider interface with the {correct, reason} schema", async () => {
    gemini = await startFakeGemini({
      handler: () => ({ json: { correct: true, reason: "same number" }, usage: { input: 50, output: 10 } }),
    });
    const model = createProvider("gemini", {
      apiKey: "k",
      baseUrl: gemini.url,
      retry: { ...DEFAULT_RETRY, max_retries: 0 },
    });
    const j = await judgeAnswer(model, { query: "What is 1 + 1", expected: "2", output: "two" });
    expect(j.verdict).toEqual({ correct: true, reason: "same number" });
    expect(j.result.usage).toEqual({ input_tokens: 50, output_tokens: 10 });
    const req = gemini.requests[0]!;
    expect(Object.keys((req.schema as { properties: object }).properties).sort()).toEqual([
      "correct",
      "reason",
    ]);
    expect(req.userText).toMatch(/Expected answer:\n2\n/);
    expect(req.userText).toMatch(/The agent's answer:\ntwo\n/);
    expect(req.systemText).toMatch(/judge/);
  });
});
