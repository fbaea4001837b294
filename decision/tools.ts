/** How the decision prompt shows tools: a call signature derived from the input schema, and the description. */
import { jsNames, type DownServer, type ToolInfo } from "../core/index.js";

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

/**
 * The tool list of the prompt. Tools of servers that are down are not offered: they are named apart, with
 * the reason, so the model neither invents them nor plans on them (a call still retries the server).
 */
export function renderTools(tools: ToolInfo[], down: DownServer[] = []): string {
  const isDown = new Set(down.map((d) => d.server));
  const usable = tools.filter((t) => !isDown.has(t.server));
  // Names come from every tool, so a down server's tools keep their aliases out of the others' way.
  const names = jsNames(tools);
  const listed = usable.length
    ? usable
        .map((t) => {
          const desc = t.description.replace(/\s+/g, " ").trim();
          return `- ${toolSignature(t, names.tools.get(t.qualified)!.call)} [${t.qualified}]${desc ? ` — ${desc}` : ""}`;
        })
        .join("\n")
    : "(no tools are connected)";
  if (down.length === 0) return listed;
  const lines = down.map((d) => {
    const what = d.tools.length ? `its tools ${d.tools.join(", ")}` : "its tools are not known";
    return `- ${d.server}${d.description ? ` (${d.description})` : ""}: ${d.reason}; ${what}`;
  });
  return `${listed}\n\nUnavailable now (their server is down; do not plan on these tools, and do not make up their results):\n${lines.join("\n")}`;
}
