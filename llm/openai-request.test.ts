/** The chat-completions request builder against the API's published rules (testing/openai-rules.ts). */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { DecisionOutput, PerceptionSnapshot, modelJsonSchema } from "../core/index.js";
import { openAIRequestProblem } from "../testing/index.js";
import { bundledModelsConfig, buildChatRequest, dropOptionalNulls, familyOf, strictSchema } from "./index.js";

const turn = (schema: z.ZodType) => ({
  role: "decision",
  system: "plan",
  prompt: "2 + 2",
  jsonSchema: modelJsonSchema(schema),
  schemaName: "DecisionOutput",
  call: { temperature: 0.3, max_output_tokens: 4096 },
});

describe("openai request builder", () => {
  const config = bundledModelsConfig();
  const models = [
    "gpt-5",
    "gpt-5-mini",
    "o1",
    "o3-mini",
    "o4-mini",
    "gpt-4o-mini",
    "gpt-4.1",
    "gpt-4-turbo",
    "llama3.2",
  ];

  it.each(models)("%s: every role's request follows the published rules", (model) => {
    const family = familyOf(config, "openai", model);
    for (const schema of [PerceptionSnapshot, DecisionOutput]) {
      const { body } = buildChatRequest(
        turn(schema),
        model,
        family,
        family?.structured ?? config.openai.structured,
      );
      expect(openAIRequestProblem(body as never)).toBeUndefined();
    }
  });

  it("a reasoning model's body without the family table breaks the rules (the check has teeth)", () => {
    const { body } = buildChatRequest(turn(DecisionOutput), "o3", undefined, "json_schema");
    expect(openAIRequestProblem(body as never)).toMatch(/max_tokens/);
    const { max_tokens: _m, temperature: _t, ...rest } = body;
    const loose = {
      ...rest,
      response_format: {
        type: "json_schema",
        json_schema: { name: "x", strict: true, schema: modelJsonSchema(DecisionOutput) },
      },
    };
    expect(openAIRequestProblem(loose as never)).toMatch(
      /Invalid schema for response_format 'x': In context=\(\), 'additionalProperties'/,
    );
  });

  it("a schema strict mode cannot express (a free-form record) is sent as guidance, strict false", () => {
    const schema = z.object({ args: z.record(z.string(), z.unknown()) });
    expect(strictSchema(modelJsonSchema(schema))).toBeUndefined();
    const { body, strict } = buildChatRequest(
      turn(schema),
      "gpt-4o",
      familyOf(config, "openai", "gpt-4o"),
      "strict",
    );
    expect(strict).toBe(false);
    expect(body.response_format).toMatchObject({ type: "json_schema", json_schema: { strict: false } });
  });

  it("optional fields become nullable and required; the nulls are dropped from the reply again", () => {
    const schema = z.object({
      a: z.string(),
      b: z.number().optional(),
      c: z.array(z.object({ d: z.string().optional() })),
    });
    const js = modelJsonSchema(schema);
    const strict = strictSchema(js)!;
    expect(strict).toMatchObject({
      required: ["a", "b", "c"],
      additionalProperties: false,
      properties: {
        b: { type: ["number", "null"] },
        c: { items: { required: ["d"], additionalProperties: false } },
      },
    });
    const reply = { a: "x", b: null, c: [{ d: null }, { d: "y" }] };
    expect(schema.parse(dropOptionalNulls(reply, js))).toEqual({ a: "x", c: [{}, { d: "y" }] });
  });
});
