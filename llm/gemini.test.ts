/** The Gemini provider through the real @google/genai client against the fake Gemini server on 127.0.0.1. */
import { afterEach, describe, expect, it } from "vitest";
import { DecisionOutput, ModelError, PerceptionSnapshot, modelJsonSchema } from "../core/index.js";
import {
  FakeClock,
  sampleDecision,
  samplePerception,
  scriptedGeminiHandler,
  startFakeGemini,
  type FakeGemini,
  type FakeGeminiHandler,
} from "../testing/index.js";
import {
  bundledModelsConfig,
  createProvider,
  geminiAuth,
  ModelOutputError,
  type ModelsFile,
  type ProviderOptions,
} from "./index.js";

let fake: FakeGemini | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function setup(handler: FakeGeminiHandler, options: ProviderOptions = {}) {
  fake = await startFakeGemini({ handler });
  const clock = new FakeClock();
  const provider = createProvider("gemini:gemini-test-flash", {
    env: { GEMINI_API_KEY: "test-key", GEMINI_BASE_URL: fake.url },
    clock,
    random: () => 0.5,
    ...options,
  });
  return { fake, clock, provider };
}

const perceive = {
  role: "perception",
  system: "You are the perception module.",
  prompt: "Query: What is 32 + 5 - 3 * 2",
  schema: PerceptionSnapshot,
  schemaName: "PerceptionSnapshot",
};

async function rejection(p: Promise<unknown>): Promise<ModelError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ModelError);
  return e as ModelError;
}

describe("gemini provider", () => {
  it("sends JSON mode with the derived schema and returns the validated value with usage", async () => {
    const { fake, provider } = await setup(() => ({
      json: samplePerception(),
      usage: { input: 120, output: 40, thoughts: 10 },
    }));
    const r = await provider.generate(perceive);
    expect(r.value).toEqual(samplePerception());
    expect(r).toMatchObject({ provider: "gemini", model: "gemini-test-flash", attempts: 1, retries: 0 });
    expect(r.usage).toEqual({ input_tokens: 120, output_tokens: 50 });
    const req = fake.requests[0]!;
    expect(req.model).toBe("gemini-test-flash");
    expect(req.headers["x-goog-api-key"]).toBe("test-key");
    expect(req.body.generationConfig).toMatchObject({
      responseMimeType: "application/json",
      responseJsonSchema: modelJsonSchema(PerceptionSnapshot),
    });
    expect(req.systemText).toBe(perceive.system);
    expect(req.userText).toBe(perceive.prompt);
    expect(req.role).toBe("perception");
  });

  it("repairs fenced JSON with trailing prose without another call", async () => {
    const text =
      "Sure! Here it is:\n```json\n" + JSON.stringify(samplePerception()) + "\n```\nHope this helps.";
    const { fake, provider } = await setup(() => ({ text }));
    const r = await provider.generate(perceive);
    expect(r.value.confidence).toBe(0.9);
    expect(r.attempts).toBe(1);
    expect(fake.requests).toHaveLength(1);
  });

  it("asks once more on a schema violation, showing the model its error", async () => {
    const bad = { ...sampleDecision(), type: "CONCLUDE", code: undefined };
    const script = scriptedGeminiHandler({ decision: [{ json: bad }, { json: sampleDecision() }] });
    const { fake, provider } = await setup(script.handler);
    const r = await provider.generate({
      role: "decision",
      system: "plan",
      prompt: "Make a plan",
      schema: DecisionOutput,
      schemaName: "DecisionOutput",
    });
    expect(r.value.type).toBe("CODE");
    expect(r.attempts).toBe(2);
    expect(fake.requests[1]!.userText).toContain("Make a plan");
    expect(fake.requests[1]!.userText).toContain(
      'conclusion: a CONCLUDE step needs a non-empty "conclusion"',
    );
    expect(script.unconsumed()).toEqual({});
  });

  it("gives a typed error after the repair round also fails", async () => {
    const { fake, provider } = await setup(() => ({ json: { entities: "not a list" } }));
    const e = await rejection(provider.generate(perceive));
    expect(e.code).toBe("MODEL_INVALID_OUTPUT");
    expect(e.message).toMatch(/entities/);
    expect(fake.requests).toHaveLength(2);
  });

  it("throws MODEL_NO_KEY (exit 3) at creation when GEMINI_API_KEY is not set", () => {
    let e: unknown;
    try {
      createProvider("gemini", { env: {} });
    } catch (err) {
      e = err;
    }
    expect(e).toBeInstanceOf(ModelError);
    expect((e as ModelError).code).toBe("MODEL_NO_KEY");
    expect((e as ModelError).exitCode).toBe(3);
    expect((e as ModelError).message).toMatch(/GEMINI_API_KEY/);
    expect((e as ModelError).message).toMatch(/scripted:<file>/);
  });

  it("honours the RetryInfo delay of a 429 (measured in the fake clock)", async () => {
    let n = 0;
    const { fake, clock, provider } = await setup(() =>
      ++n === 1
        ? { status: 429, message: "Quota exceeded", retryDelay: "38s" }
        : { json: samplePerception() },
    );
    const r = await provider.generate(perceive);
    expect(r.value).toEqual(samplePerception());
    expect(r.retries).toBe(1);
    expect(clock.sleeps).toEqual([38_000]);
    expect(fake.requests).toHaveLength(2);
  });

  it("backs off exponentially with jitter on 500/503", async () => {
    let n = 0;
    const { clock, provider } = await setup(() =>
      ++n <= 3 ? { status: n === 2 ? 500 : 503 } : { json: samplePerception() },
    );
    const r = await provider.generate(perceive);
    expect(r.retries).toBe(3);
    // random() = 0.5 → half fixed + a quarter: 0.75 × base × 2^(k-1)
    expect(clock.sleeps).toEqual([750, 1500, 3000]);
  });

  it("stops retrying after max_retries with the last error's code", async () => {
    const { fake, provider } = await setup(() => ({ status: 429 }), {
      retry: { max_retries: 2, base_delay_ms: 10, max_delay_ms: 100, max_server_delay_ms: 1000 },
    });
    const e = await rejection(provider.generate(perceive));
    expect(e.code).toBe("MODEL_RATE_LIMITED");
    expect(e.message).toMatch(/gave up after 3 tries/);
    expect(fake.requests).toHaveLength(3);
  });

  it("does not wait for a RetryInfo delay longer than the policy allows", async () => {
    const { clock, provider } = await setup(() => ({ status: 429, retryDelay: "3600s" }));
    const e = await rejection(provider.generate(perceive));
    expect(e.code).toBe("MODEL_RATE_LIMITED");
    expect(e.message).toMatch(/retry in 3600 s/);
    expect(clock.sleeps).toEqual([]);
  });

  it("does not retry a 400", async () => {
    const { fake, provider } = await setup(() => ({ status: 400, message: "Invalid JSON schema" }));
    const e = await rejection(provider.generate(perceive));
    expect(e.code).toBe("MODEL_HTTP");
    expect(e.message).toMatch(/Invalid JSON schema/);
    expect(fake.requests).toHaveLength(1);
  });

  it("reports a rejected API key as MODEL_NO_KEY (exit 3)", async () => {
    const { provider } = await setup(() => ({
      status: 400,
      message: "API key not valid. Please pass a valid API key.",
    }));
    const e = await rejection(provider.generate(perceive));
    expect(e).toMatchObject({ code: "MODEL_NO_KEY", exitCode: 3 });
    expect(e.message).toMatch(/check GEMINI_API_KEY/);
  });

  it("turns blocked, empty and MAX_TOKENS replies into typed errors", async () => {
    const replies = [
      { blocked: "SAFETY" },
      { empty: true as const },
      { empty: true as const, noCandidates: true },
      { text: '{"entities": ["a"', finishReason: "MAX_TOKENS" },
      { text: "", finishReason: "SAFETY" },
    ];
    const { provider } = await setup((req) => replies[req.n - 1]!);
    const codes = [];
    for (let i = 0; i < replies.length; i++) codes.push((await rejection(provider.generate(perceive))).code);
    expect(codes).toEqual([
      "MODEL_BLOCKED",
      "MODEL_EMPTY",
      "MODEL_EMPTY",
      "MODEL_TRUNCATED",
      "MODEL_BLOCKED",
    ]);
  });

  it("a cut-off or blocked reply was paid for: its tokens and their cost are on the error", async () => {
    const partial = '{"entities": ["32", "5"], "reasoning": "the sum is';
    const replies = [
      { text: partial, finishReason: "MAX_TOKENS", usage: { input: 400, output: 8000, thoughts: 192 } },
      { text: "", finishReason: "SAFETY", usage: { input: 300, output: 12 } },
      { blocked: "PROHIBITED_CONTENT", usage: { input: 250, output: 0 } },
    ];
    const { fake, provider } = await setup((req) => replies[req.n - 1]!, {
      costs: { "gemini-test-flash": { input_per_mtok: 1, output_per_mtok: 10 } },
    });
    const errors: ModelOutputError[] = [];
    for (let i = 0; i < replies.length; i++) {
      const e = await rejection(provider.generate(perceive));
      expect(e).toBeInstanceOf(ModelOutputError);
      errors.push(e as ModelOutputError);
    }
    expect(errors.map((e) => [e.code, e.usage, e.attempts, e.raw])).toEqual([
      ["MODEL_TRUNCATED", { input_tokens: 400, output_tokens: 8192 }, 1, partial],
      ["MODEL_BLOCKED", { input_tokens: 300, output_tokens: 12 }, 1, ""],
      ["MODEL_BLOCKED", { input_tokens: 250, output_tokens: 0 }, 1, ""],
    ]);
    expect(errors.map((e) => e.cost_usd)).toEqual([
      (400 + 8192 * 10) / 1e6,
      (300 + 12 * 10) / 1e6,
      250 / 1e6,
    ]);
    // Not retried, and no repair round: the same prompt would be cut off or blocked again.
    expect(fake.requests).toHaveLength(3);
  });

  it("a repair call cut off keeps the first call's tokens: both are on the error", async () => {
    const script = scriptedGeminiHandler({
      perception: [
        { json: { entities: "not a list" }, usage: { input: 100, output: 20 } },
        { text: '{"entities": [', finishReason: "MAX_TOKENS", usage: { input: 150, output: 500 } },
      ],
    });
    const { provider } = await setup(script.handler, {
      costs: { "gemini-test-flash": { input_per_mtok: 1, output_per_mtok: 10 } },
    });
    const e = await rejection(provider.generate(perceive));
    expect(e).toBeInstanceOf(ModelOutputError);
    expect(e).toMatchObject({
      code: "MODEL_TRUNCATED",
      usage: { input_tokens: 250, output_tokens: 520 },
      attempts: 2,
      raw: '{"entities": [',
    });
    expect((e as ModelOutputError).cost_usd).toBeCloseTo((250 + 520 * 10) / 1e6, 12);
    expect(script.unconsumed()).toEqual({});
  });

  it("times out a call that does not answer in time", async () => {
    const { provider } = await setup(() => ({ delayMs: 10_000, json: samplePerception() }), {
      timeout_ms: 150,
      retry: { max_retries: 0, base_delay_ms: 1, max_delay_ms: 1, max_server_delay_ms: 1 },
    });
    const e = await rejection(provider.generate(perceive));
    expect(e.code).toBe("MODEL_TIMEOUT");
  });

  it("reports an unreachable endpoint as MODEL_UNREACHABLE (exit 3) after retrying", async () => {
    const { fake: f } = await setup(() => ({ json: samplePerception() }));
    const url = f.url;
    await f.close();
    fake = undefined;
    const clock = new FakeClock();
    const provider = createProvider("gemini", { env: { GEMINI_API_KEY: "k", GEMINI_BASE_URL: url }, clock });
    const e = await rejection(provider.generate(perceive));
    expect(e.code).toBe("MODEL_UNREACHABLE");
    expect(e.exitCode).toBe(3);
    expect(clock.sleeps).toHaveLength(4);
  });

  it("reports a fetch that fails without an HTTP answer (a blocked port) as MODEL_UNREACHABLE naming GEMINI_BASE_URL", async () => {
    const clock = new FakeClock();
    // fetch refuses port 9 itself ("bad port"): a TypeError with no errno code.
    const env = { GEMINI_API_KEY: "k", GEMINI_BASE_URL: "http://127.0.0.1:9" };
    const e = await rejection(createProvider("gemini", { env, clock }).generate(perceive));
    expect(e).toMatchObject({ code: "MODEL_UNREACHABLE", exitCode: 3 });
    expect(e.message).toMatch(/check GEMINI_BASE_URL \(http:\/\/127.0.0.1:9\)/);
    expect(clock.sleeps).toHaveLength(4);
  });

  it("adds cost_usd from the model's price", async () => {
    const { provider } = await setup(
      () => ({ json: samplePerception(), usage: { input: 1_000_000, output: 500_000 } }),
      {
        costs: { "gemini-test-flash": { input_per_mtok: 0.3, output_per_mtok: 2.5 } },
      },
    );
    const r = await provider.generate(perceive);
    expect(r.cost_usd).toBeCloseTo(0.3 + 1.25, 10);
  });
});

describe("gemini request per model family", () => {
  const geminiEnv = () => ({ GEMINI_API_KEY: "test-key", GEMINI_BASE_URL: fake!.url });

  it("Gemini 3 (gemini-flash-latest): temperature 1.0 whatever the role asks, a thinking level, room for thinking", async () => {
    fake = await startFakeGemini({ handler: () => ({ json: samplePerception() }) });
    const p = createProvider("gemini:gemini-flash-latest", {
      env: geminiEnv(),
      temperature: 0.2,
      max_output_tokens: 4096,
    });
    await p.generate(perceive);
    expect(fake.requests[0]!.body.generationConfig).toMatchObject({
      temperature: 1,
      maxOutputTokens: 4096 + 8192,
      thinkingConfig: { thinkingLevel: "LOW" },
    });
  });

  it("Gemini 2.5: the role's temperature and a thinking budget, added to the cap", async () => {
    fake = await startFakeGemini({ handler: () => ({ json: samplePerception() }) });
    const p = createProvider("gemini:gemini-2.5-flash", {
      env: geminiEnv(),
      temperature: 0.2,
      max_output_tokens: 4096,
    });
    await p.generate(perceive);
    const gc = fake.requests[0]!.body.generationConfig!;
    expect(gc).toMatchObject({
      temperature: 0.2,
      maxOutputTokens: 4096 + 2048,
      thinkingConfig: { thinkingBudget: 2048 },
    });
    expect(gc.thinkingConfig).not.toHaveProperty("thinkingLevel");
  });

  it("an empty reply cut off by MAX_TOKENS is asked again with twice the cap; both calls are counted", async () => {
    const replies = [
      { text: "", finishReason: "MAX_TOKENS", usage: { input: 100, output: 0, thoughts: 6000 } },
      { json: samplePerception(), usage: { input: 100, output: 50, thoughts: 7000 } },
    ];
    fake = await startFakeGemini({ handler: (req) => replies[req.n - 1]! });
    const p = createProvider("gemini:gemini-2.5-flash", { env: geminiEnv(), max_output_tokens: 4000 });
    const r = await p.generate(perceive);
    expect(r.value).toEqual(samplePerception());
    expect(r.usage).toEqual({ input_tokens: 200, output_tokens: 13_050 });
    expect(r.retries).toBe(1);
    expect(fake.requests.map((q) => q.body.generationConfig!.maxOutputTokens)).toEqual([6048, 12_096]);
  });

  it("the fake refuses what the API refuses: a thinking level on Gemini 2.5 is a 400 reported as such", async () => {
    fake = await startFakeGemini({ handler: () => ({ json: samplePerception() }) });
    const config = { ...bundledModelsConfig(), families: [] as ModelsFile["families"] };
    config.families.push({ match: "^gemini", provider: "gemini", reasoning: false, thinking_level: "low" });
    const p = createProvider("gemini:gemini-2.5-flash", { env: geminiEnv(), config });
    const e = await rejection(p.generate(perceive));
    expect(e).toMatchObject({ code: "MODEL_HTTP" });
    expect(e.message).toMatch(/Thinking level is not supported/);
  });

  it("accepts GOOGLE_API_KEY as the SDK does", async () => {
    fake = await startFakeGemini({ handler: () => ({ json: samplePerception() }) });
    const p = createProvider("gemini:gemini-test-flash", {
      env: { GOOGLE_API_KEY: "g-key", GEMINI_BASE_URL: fake.url },
    });
    await p.generate(perceive);
    expect(fake.requests[0]!.headers["x-goog-api-key"]).toBe("g-key");
  });

  it("Vertex AI with GOOGLE_GENAI_USE_VERTEXAI and a key (express mode) calls the Vertex path", async () => {
    fake = await startFakeGemini({ handler: () => ({ json: samplePerception() }) });
    const env = { GOOGLE_GENAI_USE_VERTEXAI: "true", GOOGLE_API_KEY: "v-key", GEMINI_BASE_URL: fake.url };
    const p = createProvider("gemini:gemini-test-flash", { env });
    expect((await p.generate(perceive)).value).toEqual(samplePerception());
    expect(fake.requests[0]!.path).toMatch(
      /^\/v1beta1\/publishers\/google\/models\/gemini-test-flash:generateContent/,
    );
    expect(fake.requests[0]!.headers["x-goog-api-key"]).toBe("v-key");
  });

  it("Vertex AI with a project and location needs no key", () => {
    const env = {
      GOOGLE_GENAI_USE_VERTEXAI: "true",
      GOOGLE_CLOUD_PROJECT: "p1",
      GOOGLE_CLOUD_LOCATION: "europe-west4",
    };
    expect(geminiAuth(env)).toEqual({ vertexai: true, project: "p1", location: "europe-west4" });
    expect(() => geminiAuth({ GOOGLE_GENAI_USE_VERTEXAI: "true" })).toThrow(/GOOGLE_CLOUD_PROJECT/);
  });
});
