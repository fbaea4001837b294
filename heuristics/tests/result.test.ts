import { describe, expect, it } from "vitest";
import { Finding, findingsToStepError, guardResult, truncateForPrompt, type FindingRule } from "../index.js";
import type { ResultGuardOptions } from "../index.js";

type Case = {
  name: string;
  value: unknown;
  options?: ResultGuardOptions;
  expect: Array<[FindingRule, "info" | "warn" | "block"]>;
};

const cases: Case[] = [
  // good results
  { name: "a number", value: 42, expect: [] },
  { name: "an answer in words", value: "The capital of France is Paris.", expect: [] },
  { name: "structured data", value: { temperature: 21.5, unit: "C" }, expect: [] },
  { name: "a list", value: [1, 2, 3], expect: [] },
  { name: "zero and false are results", value: 0, expect: [] },
  {
    name: "text about errors is not an error",
    value: "Chapter 3 explains how error handling works in Rust.",
    expect: [],
  },
  { name: "the Forbidden City", value: "The Forbidden City is in Beijing.", expect: [] },
  {
    name: "a long document mentioning 'file not found' deep inside",
    value: "Intro. ".repeat(100) + "The message file not found appears when the path is wrong.",
    expect: [],
  },
  { name: "a number as expected", value: 42, options: { expect: "number" }, expect: [] },
  {
    name: "{result: n} counts as a number",
    value: { result: 42 },
    options: { expect: "number" },
    expect: [],
  },
  { name: "empty list allowed", value: [], options: { allowEmpty: true }, expect: [] },
  // disguised errors
  { name: "Error: prefix", value: "Error: division by zero", expect: [["result.error_text", "block"]] },
  {
    name: "typed error prefix",
    value: "ValueError: math domain error",
    expect: [["result.error_text", "block"]],
  },
  { name: "File not found", value: "File not found: /tmp/x.csv", expect: [["result.error_text", "block"]] },
  { name: "ENOENT", value: "open failed (ENOENT)", expect: [["result.error_text", "block"]] },
  { name: "HTTP 404", value: "Request returned HTTP 404", expect: [["result.error_text", "block"]] },
  {
    name: "could not fetch",
    value: "Sorry, could not fetch the page.",
    expect: [["result.error_text", "block"]],
  },
  {
    name: "Python traceback",
    value: 'Traceback (most recent call last):\n  File "x.py", line 1\nZeroDivisionError: division by zero',
    expect: [["result.traceback", "block"]],
  },
  {
    name: "JS stack trace",
    value:
      "TypeError: x is undefined\n    at run (file:///srv/tool.js:10:5)\n    at main (file:///srv/tool.js:20:3)",
    expect: [["result.traceback", "block"]],
  },
  {
    name: "MCP content with an error text",
    value: { content: [{ type: "text", text: "Error: unknown city" }] },
    expect: [["result.error_text", "block"]],
  },
  {
    name: "small object with an error message",
    value: { message: "Error: rate limited" },
    expect: [["result.error_text", "block"]],
  },
  { name: "{error: ...}", value: { error: "quota exceeded" }, expect: [["result.error_field", "block"]] },
  {
    name: "{isError: true}",
    value: { isError: true, content: [] },
    expect: [["result.error_field", "block"]],
  },
  {
    name: "{ok: false}",
    value: { ok: false, reason: "no route" },
    expect: [["result.error_field", "block"]],
  },
  { name: "{status: 'failed'}", value: { status: "failed" }, expect: [["result.error_field", "block"]] },
  // empty
  { name: "undefined (forgotten return)", value: undefined, expect: [["result.empty", "block"]] },
  { name: "null", value: null, expect: [["result.empty", "block"]] },
  { name: "empty string", value: "  ", expect: [["result.empty", "block"]] },
  { name: "the text None", value: "None", expect: [["result.empty", "block"]] },
  { name: "empty list", value: [], expect: [["result.empty", "block"]] },
  { name: "empty object", value: {}, expect: [["result.empty", "block"]] },
  // numbers
  { name: "NaN", value: Number.NaN, expect: [["result.not_a_number", "block"]] },
  { name: "Infinity", value: Number.POSITIVE_INFINITY, expect: [["result.not_a_number", "block"]] },
  { name: "the text NaN", value: "NaN", expect: [["result.not_a_number", "block"]] },
  { name: "NaN inside", value: { rows: [{ avg: Number.NaN }] }, expect: [["result.not_a_number", "block"]] },
  {
    name: "text where a number was wanted",
    value: "seven",
    options: { expect: "number" },
    expect: [["result.not_a_number", "block"]],
  },
  {
    name: "numeric text where a number was wanted",
    value: " 42 ",
    options: { expect: "number" },
    expect: [["result.not_a_number", "info"]],
  },
  {
    name: "null where a number was wanted",
    value: null,
    options: { expect: "number" },
    expect: [["result.empty", "block"]],
  },
  // the sandbox's tagged values (action/codec.ts)
  { name: "tagged undefined", value: { $pda: "undefined" }, expect: [["result.empty", "block"]] },
  { name: "tagged NaN", value: { $pda: "number", value: "NaN" }, expect: [["result.not_a_number", "block"]] },
  {
    name: "tagged -Infinity inside",
    value: { a: [1, { $pda: "number", value: "-Infinity" }] },
    expect: [["result.not_a_number", "block"]],
  },
  {
    name: "a returned Error object",
    value: {
      $pda: "error",
      name: "ToolError",
      message: "math.add: missing b",
      code: "TOOL_INVALID_ARGS",
      tool: "math.add",
    },
    expect: [["result.error_field", "block"]],
  },
  {
    name: "a returned function",
    value: { $pda: "function", name: "add" },
    expect: [["result.unexpected_type", "block"]],
  },
  {
    name: "some parallel parts failed",
    value: [3, { $pda: "error", name: "ToolError", message: "timeout" }],
    expect: [["result.error_field", "warn"]],
  },
  {
    name: "every parallel part failed",
    value: [{ $pda: "error", name: "ToolError", message: "timeout" }],
    expect: [["result.error_field", "block"]],
  },
  {
    name: "a tagged date is a value",
    value: { $pda: "date", value: "2024-01-02T03:04:05.000Z" },
    expect: [],
  },
  {
    name: "wrong type",
    value: 3,
    options: { expect: "array" },
    expect: [["result.unexpected_type", "warn"]],
  },
];

describe("guardResult rules", () => {
  it.each(cases)("$name", ({ value, options, expect: want }) => {
    const r = guardResult(value, options);
    for (const f of r.findings) Finding.parse(f);
    const got = r.findings.map((f) => [f.rule, f.severity]);
    for (const w of want) expect(got).toContainEqual(w);
    const wanted = new Set(want.map(([rule]) => rule));
    expect(r.findings.filter((f) => !wanted.has(f.rule))).toEqual([]);
    expect(r.ok).toBe(!want.some(([, s]) => s === "block"));
  });

  it("messages quote the error and give the step a typed failure", () => {
    const r = guardResult("Error: division by zero\nmore detail");
    expect(r.findings[0]!.message).toContain('"Error: division by zero"');
    expect(findingsToStepError(r.findings)).toMatchObject({ code: "GUARD_RESULT_ERROR_TEXT" });
    expect(guardResult({ rows: [1, Number.NaN] }).findings[0]!.message).toContain("NaN at .rows[1]");
    const fn = guardResult({ $pda: "function", name: "add" }).findings[0]!.message;
    expect(fn).toContain("return await add(...)");
    const err = guardResult({ $pda: "error", name: "ToolError", code: "TOOL_TIMEOUT", message: "slow" });
    expect(err.findings[0]!.message).toBe(
      "The code returned an error instead of a value: ToolError[TOOL_TIMEOUT]: slow",
    );
  });
});

describe("truncateForPrompt", () => {
  it("leaves short values alone and renders non-strings as JSON", () => {
    expect(truncateForPrompt("abc", 10)).toBe("abc");
    expect(truncateForPrompt({ a: [1, 2] }, 100)).toBe('{"a":[1,2]}');
    expect(truncateForPrompt(undefined, 100)).toBe("undefined");
    expect(truncateForPrompt(10n, 100)).toBe('"10"');
  });

  it.each([50, 64, 100, 1000, 5000])("stays within %i chars and notes the full size", (max) => {
    const value = "a".repeat(3000) + "THE END";
    const out = truncateForPrompt(value, max);
    if (max >= value.length) {
      expect(out).toBe(value);
      return;
    }
    expect(out.length).toBeLessThanOrEqual(max);
    expect(out).toMatch(/3007 chars/);
    if (max < 100) return; // small budgets keep the head and the size only
    expect(out).toContain("3007 chars in full");
    expect(out.endsWith("THE END")).toBe(true);
    const shown = Number(/(\d+) shown/.exec(out)![1]);
    expect(out.length).toBe(shown + out.match(/ …\[.*\]… /)![0].length);
  });

  it("cuts very small budgets plainly and never splits a surrogate pair", () => {
    expect(truncateForPrompt("x".repeat(100), 10)).toBe("x".repeat(9) + "…");
    const emoji = "😀".repeat(200);
    const out = truncateForPrompt(emoji, 101);
    expect(out.length).toBeLessThanOrEqual(101);
    expect(out).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
  });

  it("handles cycles", () => {
    const a: Record<string, unknown> = { name: "a" };
    a.self = a;
    expect(truncateForPrompt(a, 100)).toBe('{"name":"a","self":"[Circular]"}');
  });
});
