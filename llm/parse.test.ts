/**
 * The malformed-output table: real-world shapes models produce, each repaired without another call or
 * turned into the typed error after the repair round (through the scripted provider's full path).
 */
import { describe, expect, it } from "vitest";
import { PerceptionSnapshot } from "../core/index.js";
import { samplePerception } from "../testing/index.js";
import { parseModelOutput, ScriptedProvider } from "./index.js";

const v = samplePerception();
const json = JSON.stringify(v);
const pretty = JSON.stringify(v, null, 2);
const singleQuoted = `{'entities': ['32', '5', '3', '2'], 'result_requirement': 'the value', 'original_goal_achieved': false,
 'reasoning': 'nothing computed yet', 'local_goal_achieved': false, 'local_reasoning': 'no step run yet',
 'last_tooluse_summary': 'none', 'solution_summary': 'not ready yet', 'confidence': 0.9}`;
const body = pretty.slice(1, -1); // the key/value lines without the braces

type Row = [
  name: string,
  raw: string,
  expected: "ok" | "MODEL_EMPTY" | "MODEL_TRUNCATED" | "MODEL_INVALID_OUTPUT",
];

const table: Row[] = [
  ["plain JSON", json, "ok"],
  ["```json fence", "```json\n" + pretty + "\n```", "ok"],
  ["bare ``` fence", "```\n" + pretty + "\n```", "ok"],
  ["fence never closed", "```json\n" + pretty, "ok"],
  ["prose before", "Sure! Here is the snapshot you asked for:\n\n" + pretty, "ok"],
  ["prose after", pretty + "\n\nLet me know if you need anything else {or more}.", "ok"],
  ["prose around a fence", "Here it is:\n```JSON\n" + pretty + "\n```\nHope this helps!", "ok"],
  ["single quotes", singleQuoted, "ok"],
  ["trailing commas", pretty.replace(/"2"\n(\s*)\]/, '"2",\n$1]').replace(/0.9\n}/, "0.9,\n}"), "ok"],
  [
    "line and block comments",
    `{\n  // the snapshot\n${body.replace('"confidence"', '/* how sure */ "confidence"')}\n}`,
    "ok",
  ],
  ["Python literals", json.replace(/false/g, "False"), "ok"],
  ["unquoted keys", json.replace(/"([a-z_]+)":/g, "$1:"), "ok"],
  ["wrapped in an array", `[${json}]`, "ok"],
  ['wrapped as {"PerceptionSnapshot": …}', `{"PerceptionSnapshot": ${json}}`, "ok"],
  ['wrapped as {"data": …}', `{"data": ${json}}`, "ok"],
  ["double-encoded string", JSON.stringify(json), "ok"],
  ["byte-order mark", "\uFEFF" + json, "ok"],
  ["raw newline inside a string", json.replace("nothing computed yet", "nothing\ncomputed yet"), "ok"],
  ["two objects, first one valid", json + "\n" + json, "ok"],
  ["curly quotes", json.replace(/"([^"]*)"/g, "\u201c$1\u201d"), "ok"],
  ["wrapped in a function call", `snapshot(${json});`, "ok"],
  ["extra keys", JSON.stringify({ ...v, mood: "cheerful" }), "ok"],
  ["cut off mid-string", pretty.slice(0, pretty.indexOf("nothing computed") + 7), "MODEL_TRUNCATED"],
  ["cut off after a value", pretty.slice(0, pretty.indexOf('"local_goal_achieved"')), "MODEL_TRUNCATED"],
  ["empty reply", "", "MODEL_EMPTY"],
  ["whitespace only", " \n\t ", "MODEL_EMPTY"],
  ["prose only, no JSON", "I'm sorry, I can't help with that request.", "MODEL_INVALID_OUTPUT"],
  ["wrong type", JSON.stringify({ ...v, confidence: "high" }), "MODEL_INVALID_OUTPUT"],
  ["missing field", JSON.stringify({ ...v, reasoning: undefined }), "MODEL_INVALID_OUTPUT"],
  ["out of range", JSON.stringify({ ...v, confidence: 7 }), "MODEL_INVALID_OUTPUT"],
  ["an array of two objects", `[${json}, ${json}]`, "MODEL_INVALID_OUTPUT"],
];

const perceive = {
  role: "perception",
  system: "s",
  prompt: "p",
  schema: PerceptionSnapshot,
  schemaName: "PerceptionSnapshot",
};

describe("malformed model output", () => {
  it("has at least 15 real-world shapes", () => {
    expect(table.length).toBeGreaterThanOrEqual(15);
  });

  it.each(table)("%s", async (_name, raw, expected) => {
    const direct = parseModelOutput(raw, PerceptionSnapshot, "PerceptionSnapshot");
    // Through the full provider path: a good reply is one turn; a bad one gets one repair turn that fails
    // the same way (a repair turn after a good reply would be a call past the script, failing the test).
    const provider = ScriptedProvider.fromScript({
      perception: expected === "ok" ? [{ raw }] : [{ raw }, { raw }],
    });
    if (expected === "ok") {
      expect(direct.ok).toBe(true);
      if (direct.ok) expect(direct.value.entities).toEqual(v.entities);
      const r = await provider.generate(perceive);
      expect(r.attempts).toBe(1);
      expect(provider.unconsumed()).toEqual({});
    } else {
      expect(direct.ok).toBe(false);
      await expect(provider.generate(perceive)).rejects.toMatchObject({ code: expected });
      expect(provider.unconsumed()).toEqual({});
      // The repair turn showed the model what was wrong with its first reply.
      expect(provider.calls[1]!.prompt).toMatch(/Your previous reply was rejected[\s\S]*Problem:\n\S/);
    }
  });

  it("names the offending fields in the validation message", () => {
    const r = parseModelOutput(JSON.stringify({ ...v, confidence: "high", entities: 3 }), PerceptionSnapshot);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.kind).toBe("invalid");
      expect(r.message).toMatch(/- entities: /);
      expect(r.message).toMatch(/- confidence: /);
    }
  });
});
