/** The scripted provider: playback per role through the same parse/repair/validate path as real models. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { ConfigError, DecisionOutput, ModelError, PerceptionSnapshot } from "../core/index.js";
import { sampleDecision, samplePerception } from "../testing/index.js";
import { createProvider, ModelOutputError, ScriptedProvider, ScriptedTransport } from "./index.js";

const dir = mkdtempSync(join(tmpdir(), "pda-scripted-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function scriptFile(name: string, script: unknown, yaml = true): string {
  const file = join(dir, name);
  writeFileSync(file, yaml ? stringify(script) : JSON.stringify(script));
  return file;
}

const perceive = (prompt = "q") => ({
  role: "perception",
  system: "sys",
  prompt,
  schema: PerceptionSnapshot,
  schemaName: "PerceptionSnapshot",
});
const decide = (prompt = "plan") => ({
  role: "decision",
  system: "sys",
  prompt,
  schema: DecisionOutput,
  schemaName: "DecisionOutput",
});

describe("scripted provider", () => {
  it("plays replies in order per role from a YAML file and records what the model was shown", async () => {
    const file = scriptFile("s.yaml", {
      perception: [samplePerception(), samplePerception({ original_goal_achieved: true })],
      decision: [sampleDecision()],
    });
    const p = createProvider(`scripted:${file}`) as ScriptedProvider;
    expect(p).toBeInstanceOf(ScriptedProvider);
    expect((await p.generate(perceive("first"))).value.original_goal_achieved).toBe(false);
    expect((await p.generate(decide())).value.type).toBe("CODE");
    expect(p.unconsumed()).toEqual({ perception: 1 });
    expect((await p.generate(perceive("second"))).value.original_goal_achieved).toBe(true);
    expect(p.unconsumed()).toEqual({});
    expect(p.calls.map((c) => [c.role, c.prompt, c.index])).toEqual([
      ["perception", "first", 0],
      ["decision", "plan", 0],
      ["perception", "second", 1],
    ]);
  });

  it("reads JSON scripts too", async () => {
    const file = scriptFile("s.json", { perception: [samplePerception()] }, false);
    const r = await createProvider(`scripted:${file}`).generate(perceive());
    expect(r).toMatchObject({ provider: "scripted", model: file, attempts: 1 });
    expect(r.usage.output_tokens).toBeGreaterThan(0);
  });

  it("repairs raw malformed text, and spends a second turn on a schema violation", async () => {
    const p = ScriptedProvider.fromScript({
      perception: [{ raw: "```json\n" + JSON.stringify(samplePerception()) + ",\n```" }],
      decision: [{ raw: '{"plan_text": [], "step_index": 0}' }, sampleDecision()],
    });
    expect((await p.generate(perceive())).attempts).toBe(1);
    const d = await p.generate(decide("make a plan"));
    expect(d.attempts).toBe(2);
    expect(p.calls[2]!.prompt).toContain("make a plan");
    expect(p.calls[2]!.prompt).toMatch(/Problem:\n- plan_text: /);
  });

  it("throws the scripted error, and SCRIPT_EXHAUSTED when a role runs out", async () => {
    const p = ScriptedProvider.fromScript({
      perception: [{ error: { code: "MODEL_TIMEOUT", message: "scripted timeout" } }],
    }).tolerate({ unexpected: true });
    await expect(p.generate(perceive())).rejects.toMatchObject({
      code: "MODEL_TIMEOUT",
      message: "scripted timeout",
    });
    const e = await p.generate(perceive("what now")).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ModelError);
    expect(e).toMatchObject({ code: "SCRIPT_EXHAUSTED" });
    expect((e as Error).message).toMatch(/no more "perception" replies.*1 played/s);
    await expect(p.generate(decide())).rejects.toMatchObject({ code: "SCRIPT_EXHAUSTED" });
  });

  it("fails with a typed error after the repair turn also fails", async () => {
    const p = ScriptedProvider.fromScript({
      perception: [{ raw: "I cannot help" }, { raw: "still no JSON" }],
    });
    const e = await p.generate(perceive()).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ModelOutputError);
    expect(e).toMatchObject({ code: "MODEL_INVALID_OUTPUT", raw: "still no JSON", attempts: 2 });
    expect((e as ModelOutputError).usage.output_tokens).toBeGreaterThan(0);
    expect(p.unconsumed()).toEqual({});
  });

  it("names the file and field of a bad script", () => {
    const missing = join(dir, "nope.yaml");
    expect(() => createProvider(`scripted:${missing}`)).toThrow(ConfigError);
    const bad = scriptFile("bad.yaml", { perception: "not a list" });
    expect(() => createProvider(`scripted:${bad}`)).toThrow(/bad\.yaml: perception: /);
    expect(() => createProvider("scripted:")).toThrow(/script file is missing/);
    expect(() => createProvider("claude:x")).toThrow(/unknown provider "claude"/);
  });

  it("reports what a test must fail on: turns never played and calls past the script, unless tolerated", async () => {
    const t = new ScriptedTransport({ perception: [samplePerception()], decision: [sampleDecision()] });
    const p = new ScriptedProvider(t);
    await p.generate(decide());
    await expect(p.generate(decide("again"))).rejects.toMatchObject({ code: "SCRIPT_EXHAUSTED" });
    expect(t.problems()).toEqual([
      'scripted:inline: turns never played: {"perception":1}',
      expect.stringMatching(/^unexpected call: scripted:inline: no more "decision" replies/),
    ]);
    t.tolerate({ unplayed: true });
    expect(t.problems()).toHaveLength(1);
    t.tolerate({ unexpected: true });
    expect(t.problems()).toEqual([]);
  });

  it("refuses an error entry whose code is not a ModelError code, instead of replying with it as a value", () => {
    const typo = scriptFile("typo.yaml", {
      perception: [{ error: { code: "MODEL_TIMEOUTT", message: "x" } }],
    });
    expect(() => createProvider(`scripted:${typo}`)).toThrow(
      /an error entry is \{error: \{code, message\}\}/,
    );
  });
});
