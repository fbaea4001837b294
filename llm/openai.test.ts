/** The OpenAI-compatible provider against a fake chat-completions server on 127.0.0.1. */
import { afterEach, describe, expect, it } from "vitest";
import { ModelError, PerceptionSnapshot, modelJsonSchema } from "../core/index.js";
import {
  FakeClock,
  openAIRequestProblem,
  samplePerception,
  startFakeOpenAI,
  type FakeOpenAI,
  type FakeOpenAIHandler,
} from "../testing/index.js";
import {
  bundledModelsConfig,
  createProvider,
  ModelOutputError,
  type ModelsFile,
  type ProviderOptions,
} from "./index.js";

/** The bundled models.yaml with its family table replaced. */
function withFamilies(families: Array<Partial<ModelsFile["families"][number]>>): ModelsFile {
  const list = families.map((f) => ({ reasoning: false, ...f })) as ModelsFile["families"];
  return { ...bundledModelsConfig(), families: list };
}

let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function setup(
  handler: FakeOpenAIHandler,
  options: ProviderOptions & { jsonSchema?: boolean; spec?: string; env?: NodeJS.ProcessEnv } = {},
) {
  fake = await startFakeOpenAI({
    handler,
    jsonSchema: options.jsonSchema,
    models: ["llama3.2:1b", "qwen2.5:0.5b"],
  });
  const clock = new FakeClock();
  const { env, spec, ...rest } = options;
  const provider = createProvider(spec ?? "openai:qwen2.5:0.5b", {
    clock,
    random: () => 0.5,
    ...rest,
    env: { OPENAI_BASE_URL: fake.url, ...env },
  });
  return { fake, clock, provider };
}

const perceive = {
  role: "perception",
  system: "You are the perception module.",
  prompt: "Query: What is 2 + 2",
  schema: PerceptionSnapshot,
  schemaName: "PerceptionSnapshot",
};

describe("openai-compatible provider", () => {
  it("sends response_format json_schema with the derived schema; usage from the reply", async () => {
    const { fake, provider } = await setup(
      () => ({ json: samplePerception(), usage: { input: 70, output: 30 } }),
      {
        env: { OPENAI_API_KEY: "sk-test" },
        temperature: 0.1,
        max_output_tokens: 512,
      },
    );
    const r = await provider.generate(perceive);
    expect(r.value).toEqual(samplePerception());
    expect(r).toMatchObject({ provider: "openai", model: "qwen2.5:0.5b", attempts: 1 });
    expect(r.usage).toEqual({ input_tokens: 70, output_tokens: 30 });
    const req = fake.requests[0]!;
    expect(req.headers.authorization).toBe("Bearer sk-test");
    expect(req.body).toMatchObject({
      model: "qwen2.5:0.5b",
      temperature: 0.1,
      max_tokens: 512,
      response_format: {
        type: "json_schema",
        json_schema: { name: "PerceptionSnapshot", schema: modelJsonSchema(PerceptionSnapshot) },
      },
    });
    expect(req.body.messages).toEqual([
      { role: "system", content: perceive.system },
      { role: "user", content: perceive.prompt },
    ]);
  });

  it("reports a 400 with the service's message and never retries in another mode", async () => {
    const { fake, provider } = await setup(() => ({ json: samplePerception() }), { jsonSchema: false });
    const e = await provider.generate(perceive).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: "MODEL_HTTP" });
    expect((e as Error).message).toMatch(/HTTP 400: response_format type json_schema is not supported/);
    expect((e as Error).message).toMatch(/structured: json_object/);
    expect(fake.requests.map((r) => r.responseFormat)).toEqual(["json_schema"]);
  });

  it("sends json_object with the schema in the prompt when the model's family says so", async () => {
    const { fake, provider } = await setup(() => ({ json: samplePerception() }), {
      config: withFamilies([{ match: "^qwen", provider: "openai", structured: "json_object" }]),
    });
    expect((await provider.generate(perceive)).value).toEqual(samplePerception());
    expect(fake.requests.map((r) => r.responseFormat)).toEqual(["json_object"]);
    expect(fake.requests[0]!.systemText).toContain('"original_goal_achieved"');
    expect(fake.requests[0]!.headers.authorization).toBe("Bearer no-key");
  });

  it("reasoning models get max_completion_tokens, no temperature, a developer message and a strict schema", async () => {
    const { fake, provider } = await setup(() => ({ json: { ...samplePerception(), human_input: null } }), {
      spec: "openai:gpt-5-mini",
      temperature: 0.2,
      max_output_tokens: 900,
    });
    const r = await provider.generate(perceive);
    // The null strict mode made the model write for an optional field is gone before validation.
    expect(r.value).toEqual(samplePerception());
    const body = fake.requests[0]!.body;
    expect(body).not.toHaveProperty("temperature");
    expect(body).not.toHaveProperty("max_tokens");
    expect(body.max_completion_tokens).toBe(900);
    expect(body.messages![0]!.role).toBe("developer");
    const rf = body.response_format!.json_schema as { strict: boolean; schema: Record<string, unknown> };
    expect(rf.strict).toBe(true);
    expect(rf.schema.additionalProperties).toBe(false);
    expect(rf.schema.required).toEqual(Object.keys(rf.schema.properties as object));
    expect(openAIRequestProblem(body)).toBeUndefined();
  });

  it("the fake answers like the real API: a reasoning model sent max_tokens is a 400 naming the field", async () => {
    const { fake, provider } = await setup(() => ({ json: samplePerception() }), {
      spec: "openai:o4-mini",
      config: withFamilies([]),
      max_output_tokens: 100,
    });
    const e = await provider.generate(perceive).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: "MODEL_HTTP" });
    expect((e as Error).message).toMatch(/'max_tokens' is not supported with this model/);
    expect(fake.requests).toHaveLength(1);
  });

  it("uses the first model the server lists when none is named", async () => {
    const { fake, provider } = await setup(() => ({ json: samplePerception() }), { spec: "openai" });
    const r = await provider.generate(perceive);
    expect(r.model).toBe("llama3.2:1b");
    expect(fake.requests[0]!.model).toBe("llama3.2:1b");
  });

  it("the SDK retries 429 and 503, honouring retry-after-ms; the tries are counted", async () => {
    const replies = [
      { status: 429, retryAfterMs: 5 },
      { status: 503, retryAfterMs: 5 },
    ];
    const { fake, provider } = await setup((req) => replies[req.n - 1] ?? { json: samplePerception() });
    const r = await provider.generate(perceive);
    expect(r.retries).toBe(2);
    expect(fake.requests.map((q) => q.headers["x-stainless-retry-count"])).toEqual(["0", "1", "2"]);
  });

  it("does not wait for a Retry-After longer than max_server_delay_ms: the 429 is reported at once", async () => {
    const { fake, provider } = await setup(() => ({ status: 429, retryAfter: "3600" }));
    const e = await provider.generate(perceive).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: "MODEL_RATE_LIMITED", retryable: true });
    expect((e as Error).message).toMatch(/retry in 3600 s, more than the 120 s/);
    expect(fake.requests).toHaveLength(1);
  });

  it("stops after max_retries with the last error's code", async () => {
    const { fake, provider } = await setup(() => ({ status: 429, retryAfterMs: 1 }), {
      retry: { max_retries: 2, base_delay_ms: 1, max_delay_ms: 1, max_server_delay_ms: 1000 },
    });
    const e = await provider.generate(perceive).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: "MODEL_RATE_LIMITED" });
    expect((e as Error).message).toMatch(/gave up after 3 tries/);
    expect(fake.requests).toHaveLength(3);
  });

  it("times out a call that does not answer in time (MODEL_TIMEOUT)", async () => {
    const { provider } = await setup(() => ({ delayMs: 10_000, json: samplePerception() }), {
      timeout_ms: 150,
      retry: { max_retries: 0, base_delay_ms: 1, max_delay_ms: 1, max_server_delay_ms: 1 },
    });
    await expect(provider.generate(perceive)).rejects.toMatchObject({ code: "MODEL_TIMEOUT" });
  });

  it("turns length, refusal and empty replies into typed errors, and repairs prose-wrapped JSON", async () => {
    const replies = [
      { text: '{"entities": ["a", "b', finishReason: "length" },
      { refusal: "I can't help with that." },
      { text: "   " },
      { text: `Here you go: ${JSON.stringify(samplePerception())} — anything else?` },
    ];
    const { provider } = await setup((req) => replies[req.n - 1]!);
    const codes: string[] = [];
    for (let i = 0; i < 3; i++) {
      const e = await provider.generate(perceive).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ModelError);
      codes.push((e as ModelError).code);
    }
    expect(codes).toEqual(["MODEL_TRUNCATED", "MODEL_BLOCKED", "MODEL_EMPTY"]);
    expect((await provider.generate(perceive)).attempts).toBe(1);
  });

  it("a cut-off or filtered reply was paid for: its tokens and their cost are on the error", async () => {
    const partial = '{"entities": ["2", "2"], "reasoning": "adding';
    const replies = [
      { text: partial, finishReason: "length", usage: { input: 90, output: 4096 } },
      { text: "", finishReason: "content_filter", usage: { input: 80, output: 7 } },
    ];
    const { fake, provider } = await setup((req) => replies[req.n - 1]!, {
      costs: { "qwen2.5:0.5b": { input_per_mtok: 2, output_per_mtok: 8 } },
    });
    const errors: unknown[] = [];
    for (let i = 0; i < replies.length; i++) errors.push(await provider.generate(perceive).catch((x) => x));
    expect(errors.every((e) => e instanceof ModelOutputError)).toBe(true);
    expect(
      (errors as ModelOutputError[]).map((e) => [e.code, e.usage, e.attempts, e.raw, e.cost_usd]),
    ).toEqual([
      ["MODEL_TRUNCATED", { input_tokens: 90, output_tokens: 4096 }, 1, partial, (90 * 2 + 4096 * 8) / 1e6],
      ["MODEL_BLOCKED", { input_tokens: 80, output_tokens: 7 }, 1, "", (80 * 2 + 7 * 8) / 1e6],
    ]);
    expect(fake.requests).toHaveLength(2);
  });

  it("a repair call cut off keeps the first call's tokens: both are on the error", async () => {
    const replies = [
      { json: { entities: "not a list" }, usage: { input: 60, output: 15 } },
      { text: '{"entities": [', finishReason: "length", usage: { input: 75, output: 300 } },
    ];
    const { provider } = await setup((req) => replies[req.n - 1]!);
    const e = await provider.generate(perceive).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ModelOutputError);
    expect(e).toMatchObject({
      code: "MODEL_TRUNCATED",
      usage: { input_tokens: 135, output_tokens: 315 },
      attempts: 2,
    });
    // No price for this model: no cost, rather than a made-up zero.
    expect((e as ModelOutputError).cost_usd).toBeUndefined();
  });

  it("a 400 refusing the response format names the server's words and the models.yaml fix; another 400 only the words", async () => {
    const { provider } = await setup((req) =>
      req.n === 1
        ? { status: 400, message: "response_format json_schema is not supported by this model" }
        : { status: 400, message: "messages: too many" },
    );
    const e = await provider.generate(perceive).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: "MODEL_HTTP", retryable: false });
    expect((e as Error).message).toMatch(
      /: HTTP 400: response_format json_schema is not supported by this model — models\.yaml: give this model a families entry with structured: json_object/,
    );
    const other = await provider.generate(perceive).catch((x: unknown) => x);
    expect((other as Error).message).toMatch(/: HTTP 400: messages: too many$/);
  });

  it("reports a 401 as MODEL_NO_KEY and an unreachable server as MODEL_UNREACHABLE (exit 3)", async () => {
    const { provider } = await setup(() => ({ status: 401, message: "invalid api key" }));
    await expect(provider.generate(perceive)).rejects.toMatchObject({ code: "MODEL_NO_KEY", exitCode: 3 });
    const url = fake!.url;
    await fake!.close();
    fake = undefined;
    const retry = { max_retries: 1, base_delay_ms: 1, max_delay_ms: 1, max_server_delay_ms: 1 };
    const p = createProvider("openai:m", { env: { OPENAI_BASE_URL: url }, retry });
    await expect(p.generate(perceive)).rejects.toMatchObject({
      code: "MODEL_UNREACHABLE",
      exitCode: 3,
      message: expect.stringMatching(/ECONNREFUSED.*gave up after 2 tries/),
    });
  });

  it("does not retry a host name that does not resolve (offline: the answer comes at once)", async () => {
    const p = createProvider("openai:m", { env: { OPENAI_BASE_URL: "http://models.invalid/v1" } });
    const e = await p.generate(perceive).catch((x: unknown) => x);
    expect(e).toMatchObject({
      code: "MODEL_UNREACHABLE",
      exitCode: 3,
      retryable: false,
      message: expect.stringMatching(/cannot connect \((ENOTFOUND|EAI_AGAIN)\); check OPENAI_BASE_URL/),
    });
  });

  it("needs OPENAI_API_KEY only for api.openai.com", () => {
    expect(() => createProvider("openai:gpt-4o-mini", { env: {} })).toThrow(/OPENAI_API_KEY/);
    expect(createProvider("openai:gpt-4o-mini", { env: { OPENAI_API_KEY: "k" } }).model).toBe("gpt-4o-mini");
  });
});
