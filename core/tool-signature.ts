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

/** A parameter's type as shown: enum values spelled out, `T[]` for arrays, `a | b` for a type list. */
function typeOf(schema: Json | undefined): string {
  if (!schema) return "any";
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  const t = schema.type;
  if (t === "array") return `${typeOf(schema.items as Json | undefined)}[]`;
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
