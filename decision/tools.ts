/** How the decision prompt shows tools: a call signature derived from the input schema, and the description. */
import { jsNames, type ToolInfo } from "../core/index.js";

type Json = Record<string, unknown>;

function typeOf(schema: Json | undefined): string {
  if (!schema) return "any";
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  const t = schema.type;
  if (t === "array") return `${typeOf(schema.items as Json | undefined)}[]`;
  if (Array.isArray(t)) return t.join(" | ");
  return typeof t === "string" ? t : "any";
}

/**
 * `add(a: number, b: number)` — parameters in schema order, optional ones marked with `?`; `callName` is how
 * sandbox code calls the tool (core/tool-names.ts).
 */
export function toolSignature(tool: ToolInfo, callName: string): string {
  const props = (tool.inputSchema.properties ?? {}) as Record<string, Json>;
  const required = new Set((tool.inputSchema.required as string[] | undefined) ?? []);
  const params = Object.entries(props).map(
    ([name, s]) => `${name}${required.has(name) ? "" : "?"}: ${typeOf(s)}`,
  );
  return `${callName}(${params.join(", ")})`;
}

export function renderTools(tools: ToolInfo[]): string {
  if (tools.length === 0) return "(no tools are connected)";
  const names = jsNames(tools);
  return tools
    .map((t) => {
      const desc = t.description.replace(/\s+/g, " ").trim();
      return `- ${toolSignature(t, names.tools.get(t.qualified)!.call)} [${t.qualified}]${desc ? ` — ${desc}` : ""}`;
    })
    .join("\n");
}
