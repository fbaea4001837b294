/**
 * validateArgs passes the arguments a flat schema of scalars plainly accepts without asking Ajv: whatever the
 * arguments, it must answer as Ajv alone does (the same value, or the same error).
 */
import { describe, expect, it } from "vitest";
import { validateArgs } from "../index.js";

/** The outcome of a check: the arguments returned, or the error's message. */
function outcome(schema: Record<string, unknown>, args: unknown): unknown {
  try {
    return { ok: validateArgs("t", schema, args as Record<string, unknown>) };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

const SCHEMAS: Array<Record<string, unknown>> = [
  // The math server's (zod through the SDK, 2020-12).
  {
    type: "object",
    properties: {
      a: { type: "number", description: "first operand" },
      b: { type: "number", description: "second operand" },
    },
    required: ["a", "b"],
    $schema: "https://json-schema.org/draft/2020-12/schema",
  },
  {
    $schema: "http://json-schema.org/draft-07/schema#",
    type: "object",
    title: "t",
    properties: {
      n: { type: "integer" },
      s: { type: "string" },
      f: { type: "boolean" },
      z: { type: "null" },
    },
    required: ["n"],
    additionalProperties: false,
  },
  { type: "object", properties: {}, additionalProperties: true },
  { type: "object" },
];

const ARGS: unknown[] = [
  { a: 1, b: 2 },
  { a: 1 },
  { a: "1", b: 2 },
  { a: Number.NaN, b: 1 },
  { a: Number.POSITIVE_INFINITY, b: 1 },
  { a: undefined, b: 2 },
  { a: 1, b: 2, extra: true },
  { n: 3 },
  { n: 3.5 },
  { n: "3" },
  { n: 3, s: "x", f: false, z: null },
  { n: 3, s: 1 },
  { n: 3, f: "no" },
  { n: 3, z: 0 },
  { n: 3, extra: 1 },
  { n: Number.NaN },
  {},
  [],
  null,
  "x",
  Object.assign(Object.create({ inherited: 1 }) as object, { n: 1, a: 1, b: 2 }),
  JSON.parse('{"__proto__": {"x": 1}, "n": 1, "a": 1, "b": 2}'),
];

describe("validateArgs on flat schemas", () => {
  it("answers as Ajv does for every argument, valid or not", () => {
    for (const schema of SCHEMAS) {
      // The same schema with a keyword the plain check does not know (Ajv, not strict, ignores it): Ajv judges.
      const ajvOnly = { ...schema, "x-judge": "ajv" };
      for (const args of ARGS) {
        expect(outcome(schema, args), `${JSON.stringify(schema)} ${JSON.stringify(args)}`).toEqual(
          outcome(ajvOnly, args),
        );
      }
    }
  });

  it("returns the caller's own object when the schema plainly accepts it", () => {
    const args = { a: 1, b: 2 };
    expect(validateArgs("add", SCHEMAS[0]!, args)).toBe(args);
    expect(() => validateArgs("add", SCHEMAS[0]!, { a: 1 })).toThrow(/missing required argument "b"/);
  });
});
