/** How the decision prompt shows tools: the call signature (core/tool-signature.ts) and the description. */
import { jsNames, oneLine, toolSignature, type DownServer, type ToolInfo } from "../core/index.js";

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
    ? usable.map((t) => toolLine(t, names.tools.get(t.qualified)!.call)).join("\n")
    : "(no tools are connected)";
  if (down.length === 0) return listed;
  const lines = down.map((d) => {
    const what = d.tools.length ? `its tools ${d.tools.join(", ")}` : "its tools are not known";
    return `- ${d.server}${d.description ? ` (${d.description})` : ""}: ${d.reason}; ${what}`;
  });
  return `${listed}\n\nUnavailable now (their server is down; do not plan on these tools, and do not make up their results):\n${lines.join("\n")}`;
}

/**
 * A tool's line by the name it is called by, made once: every decision renders its tools, and the hub's
 * ToolInfo objects are not changed once listed (a changed list brings new ones).
 */
const lines = new WeakMap<ToolInfo, Map<string, string>>();

function toolLine(t: ToolInfo, call: string): string {
  let byCall = lines.get(t);
  if (!byCall) lines.set(t, (byCall = new Map()));
  let line = byCall.get(call);
  if (line === undefined) {
    const desc = oneLine(t.description);
    line = `- ${toolSignature(t, call)} [${t.qualified}]${desc ? ` — ${desc}` : ""}`;
    byCall.set(call, line);
  }
  return line;
}
