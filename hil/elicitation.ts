/**
 * An MCP elicitation's requested schema turned into form fields (what to prompt for, of which type) and into
 * a zod validator for the content that goes back to the server.
 */
import { z } from "zod";
import type { RequestedSchema, ElicitValue } from "./questions.js";

export interface ChoiceOption {
  value: string;
  title: string;
}

/** One form field, in the order the server listed them. */
export type ElicitField = {
  name: string;
  /** The field's title, else its name. */
  label: string;
  description?: string;
  required: boolean;
} & (
  | {
      type: "string";
      format?: "email" | "uri" | "date" | "date-time";
      minLength?: number;
      maxLength?: number;
      default?: string;
    }
  | { type: "number" | "integer"; minimum?: number; maximum?: number; default?: number }
  | { type: "boolean"; default?: boolean }
  | { type: "enum"; options: ChoiceOption[]; default?: string }
  | { type: "multi_enum"; options: ChoiceOption[]; minItems?: number; maxItems?: number; default?: string[] }
);

type Prop = RequestedSchema["properties"][string];

function optionsOf(p: Prop): ChoiceOption[] | undefined {
  if ("oneOf" in p && p.oneOf) return p.oneOf.map((o) => ({ value: o.const, title: o.title }));
  if ("enum" in p && p.enum) {
    const names = "enumNames" in p ? p.enumNames : undefined;
    return p.enum.map((v, i) => ({ value: v, title: names?.[i] ?? v }));
  }
  return undefined;
}

/** The fields of a requested schema, each typed for its prompt. */
export function elicitationFields(schema: RequestedSchema): ElicitField[] {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, p]): ElicitField => {
    const base = {
      name,
      label: p.title ?? name,
      ...(p.description ? { description: p.description } : {}),
      required: required.has(name),
    };
    if (p.type === "array") {
      const items = p.items;
      const options =
        "anyOf" in items
          ? items.anyOf.map((o) => ({ value: o.const, title: o.title }))
          : items.enum.map((v) => ({ value: v, title: v }));
      return {
        ...base,
        type: "multi_enum" as const,
        options,
        minItems: p.minItems,
        maxItems: p.maxItems,
        default: p.default,
      };
    }
    if (p.type === "boolean") return { ...base, type: "boolean" as const, default: p.default };
    if (p.type === "number" || p.type === "integer") {
      return { ...base, type: p.type, minimum: p.minimum, maximum: p.maximum, default: p.default };
    }
    const options = optionsOf(p);
    if (options) return { ...base, type: "enum" as const, options, default: p.default as string | undefined };
    const s = p as Extract<Prop, { format?: unknown }>;
    return {
      ...base,
      type: "string" as const,
      format: s.format,
      minLength: s.minLength,
      maxLength: s.maxLength,
      default: s.default,
    };
  });
}

/** The validator of one field's value (required-ness is handled by the object schema). */
export function fieldSchema(f: ElicitField): z.ZodType<ElicitValue> {
  switch (f.type) {
    case "string": {
      let str: z.ZodType<string, string> =
        f.format === "email"
          ? z.email()
          : f.format === "uri"
            ? z.url()
            : f.format === "date"
              ? z.iso.date()
              : f.format === "date-time"
                ? z.iso.datetime({ offset: true })
                : z.string();
      if (f.minLength !== undefined)
        str = str.refine((v) => v.length >= f.minLength!, `at least ${f.minLength} characters`);
      if (f.maxLength !== undefined)
        str = str.refine((v) => v.length <= f.maxLength!, `at most ${f.maxLength} characters`);
      return str;
    }
    case "number":
    case "integer": {
      let n = f.type === "integer" ? z.number().int() : z.number();
      if (f.minimum !== undefined) n = n.min(f.minimum);
      if (f.maximum !== undefined) n = n.max(f.maximum);
      return n;
    }
    case "boolean":
      return z.boolean();
    case "enum":
      return z.enum(f.options.map((o) => o.value) as [string, ...string[]]);
    case "multi_enum": {
      let a = z.array(z.enum(f.options.map((o) => o.value) as [string, ...string[]]));
      if (f.minItems !== undefined) a = a.min(f.minItems);
      if (f.maxItems !== undefined) a = a.max(f.maxItems);
      return a;
    }
  }
}

/** The validator of a whole form's content: required fields present, no unknown fields, each value typed. */
export function elicitationContentSchema(schema: RequestedSchema): z.ZodType<Record<string, ElicitValue>> {
  const shape: Record<string, z.ZodType> = {};
  for (const f of elicitationFields(schema))
    shape[f.name] = f.required ? fieldSchema(f) : fieldSchema(f).optional();
  return z.strictObject(shape) as unknown as z.ZodType<Record<string, ElicitValue>>;
}

/** The default the schema gives each field that has one: what a form filled by nobody holds. */
export function schemaDefaults(schema: RequestedSchema): Record<string, ElicitValue> {
  return Object.fromEntries(
    elicitationFields(schema)
      .filter((f) => f.default !== undefined)
      .map((f) => [f.name, f.default as ElicitValue]),
  );
}

/** A one-line error for a value that fails its field's validator, or undefined when it is valid. */
export function fieldError(f: ElicitField, value: unknown): string | undefined {
  const r = fieldSchema(f).safeParse(value);
  return r.success ? undefined : r.error.issues.map((i) => i.message).join("; ");
}

/** A short type hint for a field: "integer 1..10", "email", "one of a, b", ... */
export function fieldHint(f: ElicitField): string {
  switch (f.type) {
    case "string": {
      const { minLength: lo, maxLength: hi } = f;
      const len =
        lo !== undefined && hi !== undefined
          ? `, ${lo}-${hi} chars`
          : lo !== undefined
            ? `, at least ${lo} char(s)`
            : hi !== undefined
              ? `, at most ${hi} chars`
              : "";
      return `${f.format ?? "text"}${len}`;
    }
    case "number":
    case "integer":
      if (f.minimum !== undefined && f.maximum !== undefined) return `${f.type} ${f.minimum}..${f.maximum}`;
      if (f.minimum !== undefined) return `${f.type} >= ${f.minimum}`;
      return f.maximum !== undefined ? `${f.type} <= ${f.maximum}` : f.type;
    case "boolean":
      return "yes/no";
    case "enum":
      return `one of ${f.options.map((o) => o.value).join(", ")}`;
    case "multi_enum":
      return `any of ${f.options.map((o) => o.value).join(", ")}`;
  }
}
