import { describe, expect, it } from "vitest";
import type { AgentSession, Step } from "../../core/index.js";
import { Sanitizer } from "../sanitize.js";

// A secret with characters JSON escapes, so it has a second, escaped form to look for.
const QUOTED = 'pw"with\\slash-2931';
const PLAIN = "sk-live-7f3a9c1e5b";
const clean = new Sanitizer(
  new Map([
    [QUOTED, "QUOTED_KEY"],
    [PLAIN, "PLAIN_KEY"],
  ]),
  { maxTextChars: 200, maxResultChars: 120, maxLogLines: 3 },
);
const escaped = JSON.stringify(QUOTED).slice(1, -1);

const values: Record<string, unknown> = {
  "nothing to redact": { a: "plain text", b: [1, 2, { c: null, d: true }], e: 3.5 },
  "a secret in a nested string": { a: [{ b: `key=${PLAIN};` }] },
  "a secret as a key": { [PLAIN]: 1 },
  "a secret with quotes as itself": { a: `x ${QUOTED} y` },
  "a secret with quotes in its escaped form (say, inside a raw model response)": {
    raw: `{"k":"${escaped}"}`,
  },
  "a string over maxTextChars": { a: "z".repeat(500) },
  "a string just under maxTextChars": { a: "z".repeat(150) },
  "a bare string": `say ${PLAIN}`,
  "an array of short strings": ["ab", "cd", PLAIN.slice(0, 6), PLAIN.slice(6)],
};

describe("Sanitizer", () => {
  it("gives the JSON of deep() for any value, redacting every form of a secret and cutting long strings", () => {
    for (const [name, value] of Object.entries(values)) {
      const { value: out, json } = clean.record(value);
      expect(json, name).toBe(JSON.stringify(clean.deep(value)));
      expect(JSON.parse(json), name).toEqual(out);
      expect(json, name).not.toContain(PLAIN);
      expect(json, name).not.toContain(JSON.stringify(QUOTED).slice(1, -1));
      expect(json, name).not.toContain(JSON.stringify(escaped).slice(1, -1));
    }
    expect(
      clean.record(values["a secret with quotes in its escaped form (say, inside a raw model response)"])
        .json,
    ).toContain("[REDACTED:QUOTED_KEY]");
    expect(clean.json(undefined)).toBeUndefined();
  });

  it("hands back a value with nothing to change as it is, without copying it", () => {
    const value = values["nothing to redact"];
    expect(clean.record(value).value).toBe(value);
    expect(clean.record(values["a secret in a nested string"]).value).not.toBe(
      values["a secret in a nested string"],
    );
  });

  const step = (value: unknown, logs: string[] = ["one line"]): Step => ({
    index: 0,
    description: "add",
    type: "CODE",
    code: "return 1",
    status: "completed",
    attempts: 1,
    plan_version: 1,
    execution_result: { ok: true, value, logs, tool_calls: [], duration_ms: 1 },
  });

  it("stores a step's result as it is when small and clean, capped with its full size otherwise", () => {
    const small = step({ n: 1 });
    expect(clean.step(small)).toEqual({
      step: small,
      json: JSON.stringify(small),
      resultJson: '{"n":1}',
      resultBytes: 7,
      truncated: false,
    });

    const big = clean.step(step("é".repeat(150)));
    expect(big.truncated).toBe(true);
    expect(big.resultBytes).toBe(302); // two bytes a character, and the quotes
    expect(JSON.parse(big.resultJson!)).toEqual({ $truncated: { bytes: 302, preview: expect.any(String) } });
    expect(big.json).toBe(JSON.stringify(big.step));

    const chatty = clean.step(step(1, ["a", "b", "c", "d", "e"]));
    expect(chatty.truncated).toBe(true);
    expect(chatty.step.execution_result!.logs).toEqual(["a", "b", "c", "…[2 more lines not stored]"]);

    const secret = clean.step(step({ token: PLAIN }));
    expect(secret.resultJson).toBe('{"token":"[REDACTED:PLAIN_KEY]"}');
    expect(secret.json).not.toContain(PLAIN);

    const none = clean.step({ ...small, execution_result: undefined });
    expect([none.resultJson, none.resultBytes]).toEqual([null, null]);
  });

  it("gives a session's JSON as session() would, in one scan or not", () => {
    const session = (steps: Step[], query = "what is 1 + 1"): AgentSession => ({
      $schemaVersion: 1,
      session_id: "s",
      original_query: query,
      created_at: "2025-01-01T00:00:00.000Z",
      snapshots: [],
      plan_versions: [],
      steps,
      state: {
        original_goal_achieved: true,
        final_answer: "2",
        confidence: 1,
        solution_summary: "2",
        human_inputs: [],
      },
      usage: {
        llm_calls: 1,
        input_tokens: 1,
        output_tokens: 1,
        tokens: 2,
        tool_calls: 0,
        ms: 1,
        cost_usd: 0,
      },
      status: "succeeded",
    });
    const cases = [
      session([step(1)]),
      session([step(1)], `use ${PLAIN}`),
      session([step("x".repeat(150))]),
      session([step(1, ["a", "b", "c", "d"])]),
    ];
    for (const s of cases) expect(clean.sessionJson(s)).toBe(JSON.stringify(clean.session(s)));
    expect(clean.sessionJson(cases[0]!)).toBe(JSON.stringify(cases[0]));
  });
});
