/** models.yaml and the role router: perception and decision on different providers, the default choice. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { ConfigError, DecisionOutput, ModelError, PerceptionSnapshot } from "../core/index.js";
import {
  FakeClock,
  sampleDecision,
  samplePerception,
  scriptedGeminiHandler,
  startFakeGemini,
  startFakeOpenAI,
} from "../testing/index.js";
import { bundledModelsConfig, chooseDefault, createModels, parseModelsConfig } from "./index.js";

const dir = mkdtempSync(join(tmpdir(), "pda-models-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const perceive = {
  role: "perception",
  system: "s",
  prompt: "p",
  schema: PerceptionSnapshot,
  schemaName: "PerceptionSnapshot",
};
const decide = {
  role: "decision",
  system: "s",
  prompt: "d",
  schema: DecisionOutput,
  schemaName: "DecisionOutput",
};

describe("models.yaml", () => {
  it("the bundled file is valid and has a checksummed local default", () => {
    const c = bundledModelsConfig();
    expect(c.local_default?.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(c.roles.perception?.max_output_tokens).toBeGreaterThan(0);
    expect(c.costs["gemini-flash-latest"]).toBeDefined();
  });

  it("names file, line and field of a bad value", () => {
    const text = "defaults:\n  temperature: 0.2\nroles:\n  perception:\n    temprature: 3\n";
    expect(() => parseModelsConfig("models.yaml", text)).toThrow(ConfigError);
    expect(() => parseModelsConfig("models.yaml", text)).toThrow(
      /models\.yaml:5: roles\.perception: .*temprature/,
    );
    expect(() => parseModelsConfig("m.yaml", "retry:\n  max_retries: -1\n")).toThrow(
      /m\.yaml:2: retry\.max_retries/,
    );
  });
});

describe("role router", () => {
  it("runs perception on an OpenAI-compatible server and decision on Gemini, each with its settings", async () => {
    const openai = await startFakeOpenAI({
      handler: () => ({ json: samplePerception(), usage: { input: 1000, output: 100 } }),
    });
    const script = scriptedGeminiHandler({
      decision: [{ json: sampleDecision(), usage: { input: 2000, output: 400 } }],
    });
    const gemini = await startFakeGemini({ handler: script.handler });
    try {
      const config = parseModelsConfig(
        "models.yaml",
        stringify({
          defaults: { temperature: 0.2, max_output_tokens: 1000 },
          roles: {
            perception: { model: "openai:small-local", max_output_tokens: 256 },
            decision: { model: "gemini:gemini-test-pro", temperature: 0.7 },
          },
          costs: { "gemini-test-pro": { input_per_mtok: 1, output_per_mtok: 10 } },
        }),
      );
      const models = createModels({
        config,
        env: { GEMINI_API_KEY: "k", GEMINI_BASE_URL: gemini.url, OPENAI_BASE_URL: openai.url },
        clock: new FakeClock(),
      });
      expect(models.describe().map((d) => [d.role, d.provider, d.model, d.source])).toEqual([
        ["perception", "openai", "small-local", "models.yaml roles.perception.model"],
        ["decision", "gemini", "gemini-test-pro", "models.yaml roles.decision.model"],
      ]);
      const p = await models.generate(perceive);
      const d = await models.generate(decide);
      expect(p).toMatchObject({ provider: "openai", model: "small-local" });
      expect(p.cost_usd).toBeUndefined();
      expect(d).toMatchObject({ provider: "gemini", model: "gemini-test-pro", value: sampleDecision() });
      expect(d.cost_usd).toBeCloseTo((2000 * 1 + 400 * 10) / 1e6, 12);
      expect(openai.requests[0]!.body).toMatchObject({ temperature: 0.2, max_tokens: 256 });
      expect(gemini.requests[0]!.body.generationConfig).toMatchObject({
        temperature: 0.7,
        maxOutputTokens: 1000,
      });
      expect(gemini.requests[0]!.role).toBe("decision");
      expect(script.unconsumed()).toEqual({});
    } finally {
      await openai.close();
      await gemini.close();
    }
  });

  it("--model wins for every role; roles sharing a scripted file share its turns", async () => {
    const file = join(dir, "s.yaml");
    writeFileSync(file, stringify({ perception: [samplePerception()], decision: [sampleDecision()] }));
    const config = parseModelsConfig("m.yaml", stringify({ roles: { perception: { model: "gemini" } } }));
    const models = createModels({ config, model: `scripted:${file}`, env: {} });
    expect(models.describe().every((d) => d.spec === `scripted:${file}` && d.source === "--model")).toBe(
      true,
    );
    await models.generate(perceive);
    await models.generate(decide);
    // One transport played both roles: two would each have the other role's turn left.
    expect(models.unconsumed()).toEqual({});
  });

  it("fails at start-up with MODEL_NO_KEY (exit 3) when a role needs a missing key", () => {
    const config = parseModelsConfig("m.yaml", stringify({ roles: { decision: { model: "gemini" } } }));
    let e: unknown;
    try {
      createModels({ config, env: { OPENAI_BASE_URL: "http://127.0.0.1:9/v1" } });
    } catch (err) {
      e = err;
    }
    expect(e).toBeInstanceOf(ModelError);
    expect(e).toMatchObject({ code: "MODEL_NO_KEY", exitCode: 3 });
  });
});

describe("default choice", () => {
  const config = bundledModelsConfig();
  it("prefers GEMINI_API_KEY, then OPENAI_BASE_URL, then the local default", () => {
    expect(chooseDefault({ GEMINI_API_KEY: "k", OPENAI_BASE_URL: "http://x/v1" }, config)).toMatchObject({
      spec: "gemini",
      reason: "GEMINI_API_KEY is set",
    });
    expect(chooseDefault({ OPENAI_BASE_URL: "http://x/v1", OPENAI_MODEL: "qwen" }, config).spec).toBe(
      "openai:qwen",
    );
    const local = chooseDefault({ PDA_MODEL_CACHE: dir }, config);
    expect(local.spec).toBe("llama:");
    expect(local.reason).toMatch(/Qwen2\.5 0\.5B.*downloaded on first use into/);
  });
});
