import { describe, expect, it } from "vitest";
import { Step } from "../../core/index.js";
import { estimateTokens } from "../../heuristics/index.js";
import { boundHistory, historyBound } from "../index.js";

/** A session's steps: every third fails, results and code are long, like real tool output. */
function steps(n: number): Step[] {
  return Array.from({ length: n }, (_, i) =>
    Step.parse({
      index: i,
      description:
        `Step ${i}: look up part ${i} of the answer ` + "with a rather long explanation ".repeat(i % 4),
      type: "CODE",
      code:
        `const r = await fetch_url_as_markdown({url: "https://example.com/${i}"});\n` +
        "// comment\n".repeat(300),
      status: i % 3 === 2 ? "failed" : "completed",
      attempts: 1 + (i % 2),
      execution_result:
        i % 3 === 2
          ? {
              ok: false,
              logs: [],
              tool_calls: [],
              duration_ms: 5,
              error: { code: "TOOL_TIMEOUT", message: "fetch timed out " + "x".repeat(2000) },
            }
          : {
              ok: true,
              value: { page: i, text: "lorem ipsum ".repeat(800) },
              logs: [],
              tool_calls: [],
              duration_ms: 5,
            },
      plan_version: 1 + Math.floor(i / 10),
      perception: {
        entities: [],
        result_requirement: "",
        original_goal_achieved: false,
        reasoning: "",
        local_goal_achieved: i % 3 !== 2,
        local_reasoning: "The page had the part we needed. ".repeat(20),
        last_tooluse_summary: "",
        solution_summary: "",
        confidence: 0.5,
      },
    }),
  );
}

describe("boundHistory", () => {
  it.each([5, 20, 200])("stays within its bound for %i steps", (n) => {
    const h = boundHistory(steps(n));
    expect(h.text.length).toBeLessThanOrEqual(h.maxChars);
    expect(h.maxChars).toBe(historyBound());
    expect(h.recent.map((v) => v.index)).toEqual([n - 3, n - 2, n - 1]);
    expect(h.summary.length).toBeLessThanOrEqual(11);
    expect(h.omitted).toBe(Math.max(0, n - 3 - 10));
  });

  it.each([
    { keepLast: 0, maxSummaryLines: 0 },
    { keepLast: 5, maxCharsPerResult: 50, maxCharsPerCode: 40, maxCharsPerLine: 30 },
    { keepLast: 1, maxSummaryLines: 50, maxCharsPerLine: 500 },
  ])("the bound holds for other options too: %j", (options) => {
    for (const n of [0, 1, 7, 60]) {
      const h = boundHistory(steps(n), options);
      expect(h.text.length).toBeLessThanOrEqual(historyBound(options));
      expect(h.recent.length + h.summary.length - (h.omitted ? 1 : 0) + h.omitted).toBe(n);
    }
  });

  it("keeps prompt size flat as the session grows (step 200 vs step 20)", () => {
    const t20 = estimateTokens(boundHistory(steps(20)).text);
    const t200 = estimateTokens(boundHistory(steps(200)).text);
    expect(t200).toBeLessThanOrEqual(t20 * 1.1);
    // Without bounding, 200 steps of this size would be far bigger.
    const raw = JSON.stringify(steps(200)).length;
    expect(boundHistory(steps(200)).text.length).toBeLessThan(raw / 50);
  });

  it("shows the last steps in full (truncated) and older ones one line each", () => {
    const h = boundHistory(steps(20), { keepLast: 2, maxSummaryLines: 5, maxCharsPerResult: 300 });
    expect(h.summary[0]).toBe("#0–#12: 13 earlier steps (9 completed, 4 failed), not shown");
    expect(h.summary.slice(1).map((l) => l.slice(0, 4))).toEqual(["#13 ", "#14 ", "#15 ", "#16 ", "#17 "]);
    expect(h.summary[3]).toMatch(/^#15 \[completed\] .* → \{"page":15,"text":"lorem ipsum/);
    expect(h.summary[2]).toMatch(/^#14 \[failed\] .* → error TOOL_TIMEOUT: fetch timed out/);
    const last = h.recent[1]!;
    expect(last).toMatchObject({ index: 19, type: "CODE", status: "completed", attempts: 2 });
    expect(last.result!.length).toBeLessThanOrEqual(300);
    expect(last.result).toContain("chars in full");
    expect(last.assessment).toMatch(/^done: The page had/);
    expect(h.text).toContain("Step 19 (CODE, completed, 2 attempts)");
    expect(h.text).toContain("code:\nconst r = await fetch_url_as_markdown");
    expect(h.text.indexOf("#0–#12")).toBeLessThan(h.text.indexOf("Step 18 ("));
  });

  it("shows errors, conclusions, questions and human answers of recent steps", () => {
    const base = { description: "d", attempts: 1, plan_version: 1 };
    const h = boundHistory([
      Step.parse({
        ...base,
        index: 0,
        type: "CODE",
        status: "failed",
        error: { code: "GUARD_CODE_UNKNOWN_TOOL", message: "`mul()` is not a tool" },
      }),
      Step.parse({
        ...base,
        index: 1,
        type: "NOP",
        status: "completed",
        question: "Which file?",
        human_input: "a.csv",
      }),
      Step.parse({ ...base, index: 2, type: "CONCLUDE", status: "completed", conclusion: "42" }),
    ]);
    expect(h.summary).toEqual([]);
    expect(h.recent[0]!.error).toBe("GUARD_CODE_UNKNOWN_TOOL: `mul()` is not a tool");
    expect(h.recent[1]).toMatchObject({ question: "Which file?", human_input: "a.csv" });
    expect(h.text).toContain("conclusion: 42");
  });

  it("handles no steps and keepLast 0", () => {
    expect(boundHistory([]).text).toBe("");
    const h = boundHistory(steps(4), { keepLast: 0 });
    expect(h.recent).toEqual([]);
    expect(h.summary).toHaveLength(4);
  });
});

describe("estimateTokens", () => {
  it.each([
    ["", 0],
    ["abcd", 1],
    ["hello world, this is text", 7],
    ["日本語", 3],
    ["😀", 1],
  ])("%j ≈ %i tokens", (text, tokens) => {
    expect(estimateTokens(text)).toBe(tokens);
  });
});
