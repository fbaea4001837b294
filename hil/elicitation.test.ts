import { Chalk } from "chalk";
import { describe, expect, it } from "vitest";
import {
  RequestedSchema,
  elicitationContentSchema,
  elicitationFields,
  fieldError,
  fieldHint,
  renderQuestion,
  type ElicitField,
} from "./index.js";
import { SAMPLE_QUESTIONS } from "./samples.js";

/** Every primitive the MCP spec allows in a requested schema, including the legacy enumNames form. */
const schema = RequestedSchema.parse({
  type: "object",
  properties: {
    name: { type: "string", title: "Full name", minLength: 2, maxLength: 20 },
    email: { type: "string", format: "email", description: "where to send it" },
    site: { type: "string", format: "uri" },
    born: { type: "string", format: "date" },
    age: { type: "integer", minimum: 0, maximum: 150 },
    weight: { type: "number", minimum: 0.5 },
    agree: { type: "boolean", default: true },
    size: { type: "string", enum: ["s", "m", "l"], default: "m" },
    plan: { type: "string", enum: ["f", "p"], enumNames: ["Free", "Pro"] },
    class: { type: "string", oneOf: [{ const: "eco", title: "Economy" }] },
    tags: { type: "array", items: { type: "string", enum: ["a", "b", "c"] }, minItems: 1, maxItems: 2 },
  },
  required: ["name", "email", "age"],
});

const byName = (fields: ElicitField[]) => Object.fromEntries(fields.map((f) => [f.name, f]));

describe("elicitation fields from a requested schema", () => {
  const fields = byName(elicitationFields(schema));

  it("types each field for its prompt, in order, with labels, required flags and defaults", () => {
    expect(Object.keys(fields)).toEqual(Object.keys(schema.properties));
    expect(fields.name).toMatchObject({
      type: "string",
      label: "Full name",
      required: true,
      minLength: 2,
      maxLength: 20,
    });
    expect(fields.email).toMatchObject({
      type: "string",
      format: "email",
      description: "where to send it",
      label: "email",
    });
    expect(fields.age).toMatchObject({ type: "integer", minimum: 0, maximum: 150, required: true });
    expect(fields.weight).toMatchObject({ type: "number", minimum: 0.5, required: false });
    expect(fields.agree).toMatchObject({ type: "boolean", default: true });
    expect(fields.size).toMatchObject({ type: "enum", default: "m" });
    expect((fields.plan as { options: unknown }).options).toEqual([
      { value: "f", title: "Free" },
      { value: "p", title: "Pro" },
    ]);
    expect((fields.class as { options: unknown }).options).toEqual([{ value: "eco", title: "Economy" }]);
    expect(fields.tags).toMatchObject({ type: "multi_enum", minItems: 1, maxItems: 2 });
  });

  it("gives each field a short type hint", () => {
    expect(fieldHint(fields.name!)).toBe("text, 2-20 chars");
    expect(fieldHint(fields.age!)).toBe("integer 0..150");
    expect(fieldHint(fields.weight!)).toBe("number >= 0.5");
    expect(fieldHint(fields.plan!)).toBe("one of f, p");
    expect(fieldHint(fields.tags!)).toBe("any of a, b, c");
  });

  it("validates each field by its type and bounds", () => {
    expect(fieldError(fields.name!, "A")).toMatch(/at least 2/);
    expect(fieldError(fields.name!, "Ada")).toBeUndefined();
    expect(fieldError(fields.email!, "nope")).toMatch(/email/i);
    expect(fieldError(fields.site!, "https://example.org/x")).toBeUndefined();
    expect(fieldError(fields.site!, "not a url")).toBeDefined();
    expect(fieldError(fields.born!, "2024-02-30x")).toBeDefined();
    expect(fieldError(fields.born!, "2024-02-29")).toBeUndefined();
    expect(fieldError(fields.age!, 3.5)).toBeDefined();
    expect(fieldError(fields.age!, 151)).toBeDefined();
    expect(fieldError(fields.weight!, 0.7)).toBeUndefined();
    expect(fieldError(fields.size!, "xl")).toBeDefined();
    expect(fieldError(fields.tags!, [])).toBeDefined();
    expect(fieldError(fields.tags!, ["a", "c"])).toBeUndefined();
  });

  it("validates a whole form: required present, nothing unknown", () => {
    const content = elicitationContentSchema(schema);
    expect(content.safeParse({ name: "Ada", email: "ada@example.org", age: 36 }).success).toBe(true);
    const missing = content.safeParse({ name: "Ada", age: 36 });
    expect(missing.error!.issues[0]!.path).toEqual(["email"]);
    const extra = content.safeParse({ name: "Ada", email: "ada@example.org", age: 36, shoe: 42 });
    expect(extra.success).toBe(false);
  });

  it("renders the form: message, each field with its hint, required ones starred", () => {
    const text = renderQuestion(SAMPLE_QUESTIONS.elicitation, { chalk: new Chalk({ level: 0 }) });
    expect(text).toContain("booking asks: Who is travelling?");
    expect(text).toContain("* Full name (text, at least 1 char(s))");
    expect(text).toContain("* email (email) — for the ticket");
    expect(text).toContain("* seats (integer 1..9)");
    expect(text).toContain("  class (one of economy, business)");
    expect(text).toContain("  Send me offers (yes/no)");
  });
});
