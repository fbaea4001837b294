/** How the decision prompt shows tools: a call signature derived from the input schema, and the description. */
import type { ToolInfo } from "../core/index.js";

type Json = Record<string, unknown>;

function typeOf(schema: Json | undefined): string {
  if (!schema) return "any";
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  const t = schema.type;
  if (t === "array") return `${typeOf(schema.items as Json | undefined)}[]`;
  if (Array.isArray(t)) return t.join(" | ");
  return typeof t === "string" ? t : "any";
}

/** `add(a: number, b: number)` — parameters in schema order, optional ones marked with `?`. */
export function toolSignature(tool: ToolInfo): string {
  const props = (tool.inputSchema.properties ?? {}) as Record<string, Json>;
  const required = new Set((tool.inputSchema.required as string[] | undefined) ?? []);
  const params = Object.entries(props).map(
    ([name, s]) => `${name}${required.has(name) ? "" : "?"}: ${typeOf(s)}`,
  );
  const callName = tool.unique ? tool.name : tool.qualified;
  return `${callName}(${params.join(", ")})`;
}

export function renderTools(tools: ToolInfo[]): string {
  if (tools.length === 0) return "(no tools are connected)";
  return tools
    .map((t) => {
      const desc = t.description.replace(/\s+/g, " ").trim();
      return `- ${toolSignature(t)} [${t.qualified}]${desc ? ` — ${desc}` : ""}`;
    })
    .join("\n");
}
