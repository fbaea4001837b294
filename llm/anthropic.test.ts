/** The Anthropic provider: the real @anthropic-ai/sdk against a fake Messages API on 127.0.0.1. */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ModelError, PerceptionSnapshot, modelJsonSchema } from "../core/index.js";
import {
  anthropicRequestProblem,
  samplePerception,
  startFakeAnthropic,
  type FakeAnthropic,
  type FakeAnthropicHandler,
} from "../testing/index.js";
import {
  bundledModelsConfig,
  createProvider,
  parseModelsConfig,
  ModelOutputError,
  type ModelsFile,
  type ProviderOptions,
} from "./index.js";

/** The bundled models.yaml with its family table replaced (entries go through the schema, refinements too). */
function withFamilies(families: Array<Record<string, unknown>>): ModelsFile {
  const parsed = parseModelsConfig("test.yaml", JSON.stringify({ families }));
  return { ...bundledModelsConfig(), families: parsed.families };
}

let fake: FakeAnthropic | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function setup(
  handler: FakeAnthropicHandler,
  options: ProviderOptions & { spec?: string; env?: NodeJS.ProcessEnv } = {},
) {
  fake = await startFakeAnthropic({ handler });
  const { env, spec, ...rest } = options;
  const provider = createProvider(spec ?? "anthropic:claude-sonnet-4-6", {
    ...rest,
    env: { ANTHROPIC_API_KEY: "sk-ant-test", ANTHROPIC_BASE_URL: fake.url, ...env },
  });
  return { fake, provider };
}

const perceive = {
  role: "perception",
  system: "You are the perception module.",
  prompt: "Query: What is 2 + 2",
  schema: PerceptionSnapshot,
  schemaName: "PerceptionSnapshot",
};

describe("anthropic provider", () => {
  it("Claude 4.6: structured outputs, adaptive thinking with room in max_tokens, no temperature; usage and cost", async () => {
    const { fake, provider } = await setup(
      () => ({ json: samplePerception(), thinking: "2 + 2 is simple", usage: { input: 700, output: 300 } }),
      { temperature: 0.2, max_output_tokens: 512 },
    );
    const r = await provider.generate(perceive);
    expect(r.value).toEqual(samplePerception());
    expect(r).toMatchObject({ provider: "anthropic", model: "claude-sonnet-4-6", attempts: 1, retries: 0 });
    expect(r.usage).toEqual({ input_tokens: 700, output_tokens: 300 });
    // Priced by the bundled models.yaml: $3 in, $15 out per million tokens.
    expect(r.cost_usd).toBeCloseTo((700 * 3 + 300 * 15) / 1e6, 9);
    const req = fake.requests[0]!;
    // This SDK sends the key as a bearer token, and the API version it was generated for.
    expect(req.headers.authorization).toBe("Bearer sk-ant-test");
    expect(req.headers["anthropic-version"]).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(req.body).toMatchObject({
      model: "claude-sonnet-4-6",
      max_tokens: 512 + 8192,
      system: perceive.system,
      messages: [{ role: "user", content: perceive.prompt }],
      thinking: { type: "adaptive" },
      output_config: { effort: "low", format: { type: "json_schema" } },
    });
    expect(req.body).not.toHaveProperty("temperature");
    expect(req.body).not.toHaveProperty("tools");
    const schema = req.body.output_config!.format!.schema;
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties as object)).toEqual(
      Object.keys(modelJsonSchema(PerceptionSnapshot).properties as object),
    );
    expect(anthropicRequestProblem(req.body)).toBeUndefined();
  });

  it("Claude 4.5: a thinking budget, added to max_tokens", async () => {
    const { fake, provider } = await setup(() => ({ json: samplePerception() }), {
      spec: "anthropic:claude-haiku-4-5",
      max_output_tokens: 1000,
    });
    await provider.generate(perceive);
    expect(fake.requests[0]!.body).toMatchObject({
      max_tokens: 3048,
      thinking: { type: "enabled", budget_tokens: 2048 },
      output_config: { format: { type: "json_schema" } },
    });
    expect(fake.requests[0]!.body.output_config).not.toHaveProperty("effort");
  });

  it("older models and unknown ones: one tool forced with tool_choice, no thinking; the answer is its input", async () => {
    for (const [spec, config] of [
      ["anthropic:claude-sonnet-4-0", undefined],
      ["anthropic:my-gateway-model", withFamilies([])],
    ] as const) {
      const { fake, provider } = await setup(() => ({ json: samplePerception() }), { spec, config });
      expect((await provider.generate(perceive)).value).toEqual(samplePerception());
      const body = fake.requests[0]!.body;
      expect(body.tools).toEqual([
        expect.objectContaining({
          name: "PerceptionSnapshot",
          input_schema: modelJsonSchema(PerceptionSnapshot),
        }),
      ]);
      expect(body.tool_choice).toEqual({
        type: "tool",
        name: "PerceptionSnapshot",
        disable_parallel_tool_use: true,
      });
      expect(body).not.toHaveProperty("thinking");
      expect(body).not.toHaveProperty("output_config");
      await fake.close();
    }
  });

  it("a schema structured outputs cannot express (a record) goes in a forced tool, or the prompt when thinking", async () => {
    const schema = z.object({ scores: z.record(z.string(), z.number()) });
    const ask = { ...perceive, schema, schemaName: "Scores" };
    const { fake, provider } = await setup(() => ({ json: { scores: { a: 1 } } }), {
      spec: "anthropic:claude-sonnet-4-6",
    });
    expect((await provider.generate(ask)).value).toEqual({ scores: { a: 1 } });
    expect(fake.requests[0]!.mode).toBe("prompt");
    expect(fake.requests[0]!.systemText).toContain('"scores"');
    expect(fake.requests[0]!.body.thinking).toEqual({ type: "adaptive" });
    const config = withFamilies([
      { match: "^claude", provider: "anthropic", anthropic_output: "json_schema" },
    ]);
    const p2 = createProvider("anthropic:claude-x", {
      config,
      env: { ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: fake.url },
    });
    await p2.generate(ask);
    expect(fake.requests[1]!.mode).toBe("tool");
  });

  it("reports a 400 with the service's message, once, never retried in another mode", async () => {
    // A user's family entry that gives an adaptive-only model a thinking budget: the API refuses it.
    const config = withFamilies([
      {
        match: "^claude-opus-4-7",
        provider: "anthropic",
        anthropic_output: "json_schema",
        thinking_budget: 2048,
      },
    ]);
    const { fake, provider } = await setup(() => ({ json: samplePerception() }), {
      spec: "anthropic:claude-opus-4-7",
      config,
    });
    const e = await provider.generate(perceive).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ModelError);
    expect(e).toMatchObject({ code: "MODEL_HTTP", retryable: false });
    expect((e as Error).message).toMatch(
      /HTTP 400 invalid_request_error: "thinking.type.enabled" is not supported for this model/,
    );
    expect((e as Error).message).toMatch(/models\.yaml: give claude-opus-4-7 a families entry/);
    expect(fake.requests).toHaveLength(1);
  });

  it("models.yaml refuses family entries the API would refuse", () => {
    const bad = (entry: Record<string, unknown>) => () =>
      parseModelsConfig(
        "m.yaml",
        JSON.stringify({ families: [{ match: "^c", provider: "anthropic", ...entry }] }),
      );
    expect(bad({ thinking_budget: 500 })).toThrow(/thinking_budget.*at least 1024/s);
    expect(bad({ anthropic_output: "tool", effort: "low" })).toThrow(
      /forced tool cannot be combined with thinking/,
    );
    expect(bad({ effort: "low", thinking_budget: 2048 })).toThrow(/not both/);
  });

  it("the SDK retries 429 and 529 (overloaded), honouring retry-after; the tries are counted", async () => {
    const replies = [
      { status: 429, retryAfter: "0.005" },
      { status: 529, retryAfter: "0.005" },
    ];
    const { fake, provider } = await setup((req) => replies[req.n - 1] ?? { json: samplePerception() });
    const r = await provider.generate(perceive);
    expect(r.retries).toBe(2);
    expect(fake.requests.map((q) => q.headers["x-stainless-retry-count"])).toEqual(["0", "1", "2"]);
  });

  it("does not wait for a retry-after longer than max_server_delay_ms: the 429 is reported at once", async () => {
    const { fake, provider } = await setup(() => ({ status: 429, retryAfter: "3600" }));
    const e = await provider.generate(perceive).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: "MODEL_RATE_LIMITED", retryable: true });
    expect((e as Error).message).toMatch(/rate_limit_error: This request would exceed/);
    expect((e as Error).message).toMatch(/retry in 3600 s, more than the 120 s/);
    expect(fake.requests).toHaveLength(1);
  });

  it("stops after max_retries with the last error: 529 overloaded", async () => {
    const { fake, provider } = await setup(() => ({ status: 529, retryAfter: "0.001" }), {
      retry: { max_retries: 2, base_delay_ms: 1, max_delay_ms: 1, max_server_delay_ms: 1000 },
    });
    const e = await provider.generate(perceive).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: "MODEL_HTTP", retryable: true });
    expect((e as Error).message).toMatch(/HTTP 529 overloaded_error: Overloaded \(gave up after 3 tries\)/);
    expect(fake.requests).toHaveLength(3);
  });

  it("times out a call that does not answer in time (MODEL_TIMEOUT)", async () => {
    const { provider } = await setup(() => ({ delayMs: 10_000, json: samplePerception() }), {
      timeout_ms: 150,
      retry: { max_retries: 0, base_delay_ms: 1, max_delay_ms: 1, max_server_delay_ms: 1 },
    });
    await expect(provider.generate(perceive)).rejects.toMatchObject({ code: "MODEL_TIMEOUT" });
  });

  it("thinking that used the whole cap is asked again with twice the room; both calls are billed", async () => {
    const replies = [{ thinkingOnly: true as const, usage: { input: 150, output: 1000 } }];
    const { fake, provider } = await setup(
      (req) => replies[req.n - 1] ?? { json: samplePerception(), usage: { input: 150, output: 400 } },
      { spec: "anthropic:claude-opus-4-7", max_output_tokens: 1000 },
    );
    const r = await provider.generate(perceive);
    expect(r.value).toEqual(samplePerception());
    expect(r.usage).toEqual({ input_tokens: 300, output_tokens: 1400 });
    expect(r.retries).toBe(1);
    expect(fake.requests.map((q) => q.body.max_tokens)).toEqual([9192, 18384]);
  });

  it("refusal, cut-off and empty replies are typed errors carrying their usage; an invalid reply is repaired", async () => {
    const replies = [
      { refusal: true as const, usage: { input: 80, output: 2 } },
      { text: '{"entities": ["2", "', stopReason: "max_tokens", usage: { input: 90, output: 4096 } },
      { text: "" },
      { json: { entities: "not a list" }, usage: { input: 60, output: 15 } },
      { json: samplePerception(), usage: { input: 75, output: 30 } },
    ];
    const { fake, provider } = await setup((req) => replies[req.n - 1]!, {
      spec: "anthropic:claude-sonnet-4-0",
    });
    const errors: unknown[] = [];
    for (let i = 0; i < 3; i++) errors.push(await provider.generate(perceive).catch((x: unknown) => x));
    expect(errors.every((e) => e instanceof ModelOutputError)).toBe(true);
    expect((errors as ModelOutputError[]).map((e) => [e.code, e.usage.output_tokens])).toEqual([
      ["MODEL_BLOCKED", 2],
      ["MODEL_TRUNCATED", 4096],
      ["MODEL_EMPTY", expect.any(Number)],
    ]);
    const r = await provider.generate(perceive);
    expect(r).toMatchObject({ attempts: 2, usage: { input_tokens: 135, output_tokens: 45 } });
    expect(fake.requests[4]!.userText).toMatch(/Your previous reply was rejected/);
  });

  it("keys: 401 is MODEL_NO_KEY; api.anthropic.com without a key fails at once; ANTHROPIC_AUTH_TOKEN is accepted", async () => {
    const { fake, provider } = await setup(() => ({ status: 401 }));
    await expect(provider.generate(perceive)).rejects.toMatchObject({
      code: "MODEL_NO_KEY",
      exitCode: 3,
      message: expect.stringMatching(/authentication_error: invalid x-api-key — check ANTHROPIC_API_KEY/),
    });
    expect(() => createProvider("anthropic", { env: {} })).toThrow(/ANTHROPIC_API_KEY/);
    const p = createProvider("anthropic:claude-haiku-4-5", {
      env: { ANTHROPIC_AUTH_TOKEN: "tok", ANTHROPIC_BASE_URL: fake.url },
    });
    await p.generate(perceive).catch(() => undefined);
    expect(fake.requests[1]!.headers.authorization).toBe("Bearer tok");
  });

  it("the model: --model anthropic uses ANTHROPIC_MODEL, else the default", () => {
    const env = { ANTHROPIC_API_KEY: "k" };
    expect(createProvider("anthropic", { env }).model).toBe("claude-sonnet-5-5");
    expect(createProvider("anthropic", { env: { ...env, ANTHROPIC_MODEL: "claude-haiku-4-5" } }).model).toBe(
      "claude-haiku-4-5",
    );
  });

  it("an unreachable server is MODEL_UNREACHABLE (exit 3) after the retries", async () => {
    const { fake } = await setup(() => ({ json: samplePerception() }));
    const url = fake.url;
    await fake.close();
    const retry = { max_retries: 1, base_delay_ms: 1, max_delay_ms: 1, max_server_delay_ms: 1 };
    const p = createProvider("anthropic:claude-haiku-4-5", {
      env: { ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: url },
      retry,
    });
    await expect(p.generate(perceive)).rejects.toMatchObject({
      code: "MODEL_UNREACHABLE",
      exitCode: 3,
      message: expect.stringMatching(/ECONNREFUSED.*gave up after 2 tries/),
    });
  });
});
