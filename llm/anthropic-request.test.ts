/**
 * The Messages request builder against the API's published rules (testing/anthropic-rules.ts), the rules
 * against the documented cases, and the documented responses (testing/fixtures/anthropic/) replayed through
 * the real SDK.
 */
import type { Message } from "@anthropic-ai/sdk/resources/messages/messages";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { DecisionOutput, PerceptionSnapshot, modelJsonSchema } from "../core/index.js";
import {
  anthropicFixture,
  anthropicRequestProblem,
  startFakeAnthropic,
  type FakeAnthropic,
} from "../testing/index.js";
import {
  bundledModelsConfig,
  buildMessagesRequest,
  createTransport,
  familyOf,
  readMessage,
} from "./index.js";

const turn = (schema: z.ZodType, schemaName: string) => ({
  role: "decision",
  system: "plan",
  prompt: "2 + 2",
  jsonSchema: modelJsonSchema(schema),
  schemaName,
  call: { temperature: 0.3, max_output_tokens: 4096 },
});

describe("anthropic request builder", () => {
  const config = bundledModelsConfig();
  const models = [
    "claude-sonnet-5-5",
    "claude-opus-5",
    "claude-haiku-5-5",
    "claude-fable-5-2",
    "claude-opus-4-7",
    "claude-opus-4-6",
    "claude-sonnet-4-6",
    "claude-sonnet-4-5",
    "claude-haiku-4-5-20251001",
    "claude-opus-4-1",
    "claude-sonnet-4-0",
    "claude-3-5-haiku-20241022",
  ];

  it.each(models)("%s: every role's request follows the published rules", async (model) => {
    const family = familyOf(config, "anthropic", model);
    for (const [schema, name] of [
      [PerceptionSnapshot, "PerceptionSnapshot"],
      [DecisionOutput, "DecisionOutput"],
    ] as const) {
      const { body } = await buildMessagesRequest(turn(schema, name), model, family);
      expect(anthropicRequestProblem(body as never)).toBeUndefined();
    }
  });

  it("pictures go as base64 image blocks; one of a type the API refuses is named, not sent", async () => {
    const family = familyOf(config, "anthropic", "claude-sonnet-4-5");
    const images = [
      { mimeType: "image/svg+xml", data: "PHN2Zy8+" },
      { mimeType: "image/png", data: "iVBORw0KGgo=" },
    ];
    const { body } = await buildMessagesRequest(
      { ...turn(PerceptionSnapshot, "PerceptionSnapshot"), images },
      "claude-sonnet-4-5",
      family,
    );
    expect(anthropicRequestProblem(body as never)).toBeUndefined();
    expect(body.messages[0]!.content).toEqual([
      {
        type: "text",
        text: "2 + 2\n\n(1 image goes with this prompt but could not be sent: image/svg+xml is not a type this model takes.)",
      },
      { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
    ]);
    // The rules refuse what the API refuses: an SVG sent as an image block.
    const svg = {
      ...body,
      messages: [
        {
          role: "user",
          content: [
            { type: "image", source: { type: "base64", media_type: "image/svg+xml", data: "PHN2Zy8+" } },
          ],
        },
      ],
    };
    expect(anthropicRequestProblem(svg as never)).toMatch(/media_type/);
  });

  it("the check has teeth: without the family table an adaptive-only model gets structured outputs wrong", async () => {
    const loose = await buildMessagesRequest(turn(DecisionOutput, "DecisionOutput"), "claude-opus-4-7", {
      match: ".",
      provider: "anthropic",
      reasoning: false,
      anthropic_output: "json_schema",
      thinking_budget: 2048,
    });
    expect(anthropicRequestProblem(loose.body as never)).toMatch(/"thinking.type.enabled" is not supported/);
    // The raw zod schema, not the SDK's strict transform, is refused for its objects.
    const raw = {
      ...loose.body,
      thinking: undefined,
      output_config: { format: { type: "json_schema", schema: modelJsonSchema(DecisionOutput) } },
    };
    expect(anthropicRequestProblem(raw as never)).toMatch(
      /'additionalProperties' must be explicitly set to false/,
    );
  });
});

describe("documented requests and responses (testing/fixtures/anthropic)", () => {
  let fake: FakeAnthropic | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  it.each([
    "request-json-output.json",
    "request-forced-tool.json",
    "request-thinking-budget.json",
    "request-adaptive.json",
  ])("%s is accepted by the rules", (file) => {
    expect(anthropicRequestProblem(anthropicFixture(file))).toBeUndefined();
  });

  const invalid =
    anthropicFixture<Array<{ why: string; body: Record<string, unknown>; message: string }>>(
      "invalid-cases.json",
    );
  it.each(invalid.map((c) => [c.why, c] as const))("refused with the API's message: %s", (_why, c) => {
    expect(anthropicRequestProblem(c.body)).toBe(c.message);
  });

  it("the documented message shapes read as answers or typed errors", () => {
    const json = readMessage(anthropicFixture<Message>("response-json-output.json"), "m");
    expect(JSON.parse(json.text)).toEqual({ name: "Ada Lovelace", email: "ada@example.org", plan: "Team" });
    // Thinking blocks are not the answer; thinking tokens are in output_tokens.
    expect(json.usage).toEqual({ input_tokens: 212, output_tokens: 57 });
    const tool = readMessage(anthropicFixture<Message>("response-tool-use.json"), "m", "record_reading");
    expect(JSON.parse(tool.text)).toEqual({ city: "Lisbon", celsius: 21.5 });
    expect(() => readMessage(anthropicFixture<Message>("response-max-tokens-thinking.json"), "m")).toThrow(
      expect.objectContaining({ code: "MODEL_TRUNCATED", usage: { input_tokens: 150, output_tokens: 1000 } }),
    );
    expect(() => readMessage(anthropicFixture<Message>("response-refusal.json"), "m")).toThrow(
      expect.objectContaining({ code: "MODEL_BLOCKED" }),
    );
  });

  it("the real SDK reads the documented responses and error envelopes from the wire", async () => {
    const replies = [{ fixture: "response-tool-use.json" }, { status: 400 }];
    fake = await startFakeAnthropic({ handler: (req) => replies[req.n - 1]! });
    const t = createTransport("anthropic:claude-sonnet-4-0", {
      env: { ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: fake.url },
    });
    const schema = z.object({ city: z.string(), celsius: z.number() });
    const ask = {
      role: "decision",
      system: "Store the reading.",
      prompt: "Record the reading: 21.5 degrees in Lisbon.",
      jsonSchema: modelJsonSchema(schema),
      schemaName: "record_reading",
    };
    const out = await t.complete(ask);
    expect(JSON.parse(out.text)).toEqual({ city: "Lisbon", celsius: 21.5 });
    expect(out.usage).toEqual({ input_tokens: 388, output_tokens: 41 });
    expect(fake.requests[0]!.body.tool_choice).toMatchObject({ type: "tool", name: "record_reading" });
    await expect(t.complete(ask)).rejects.toMatchObject({
      code: "MODEL_HTTP",
      message: expect.stringMatching(/HTTP 400 invalid_request_error: max_tokens: Field required$/),
    });
  });
});
