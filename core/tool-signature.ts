/**
 * The call shape of a tool as the model sees it, `add(a: number, b: number)`: the decision prompt lists tools
 * this way, and the sandbox names it in an error about a call's arguments.
 */
import type { ToolInfo } from "./tools.js";

type Json = Record<string, unknown>;

/** The schema of each parameter, by name; `{}` when the input schema has no usable `properties`. */
export function toolProperties(tool: ToolInfo): Record<string, Json> {
  const props = tool.inputSchema?.properties;
  return props && typeof props === "object" && !Array.isArray(props) ? (props as Record<string, Json>) : {};
}

/** Parameter names in positional order (the schema's property order). */
export function parameterNames(tool: ToolInfo): string[] {
  return Object.keys(toolProperties(tool));
}

/**
 * A parameter's type as shown: enum and const values spelled out, `T[]` for arrays, `a | b` for a type list or
 * an anyOf/oneOf (third-party servers write `"light" | "dark" | null` as anyOf of an enum and null).
 */
function typeOf(schema: Json | undefined): string {
  if (!schema || typeof schema !== "object") return "any";
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  if ("const" in schema) return JSON.stringify(schema.const);
  const union = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(union) && union.length > 0) {
    const parts = [...new Set(union.flatMap((s) => typeOf(s as Json).split(" | ")))];
    return parts.includes("any") ? "any" : parts.join(" | ");
  }
  const t = schema.type;
  if (t === "array") {
    const item = typeOf(schema.items as Json | undefined);
    return item.includes(" | ") ? `(${item})[]` : `${item}[]`;
  }
  if (Array.isArray(t)) return t.join(" | ");
  return typeof t === "string" ? t : "any";
}

/**
 * `add(a: number, b: number)`: parameters in schema order, optional ones marked with `?`; `name` is how the
 * code calls the tool (core/tool-names.ts), its qualified name by default.
 */
export function toolSignature(tool: ToolInfo, name: string = tool.qualified): string {
  const required = new Set(
    Array.isArray(tool.inputSchema?.required) ? (tool.inputSchema.required as string[]) : [],
  );
  const params = Object.entries(toolProperties(tool)).map(
    ([p, s]) => `${p}${required.has(p) ? "" : "?"}: ${typeOf(s)}`,
  );
  return `${name}(${params.join(", ")})`;
}
