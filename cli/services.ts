/**
 * What CODE can reach of the servers beside their tools, as sandbox namespaces: `resources.list(server?)`,
 * `resources.read(server, uri)`, `resources.templates(server?)`, `prompts.list(server?)` and
 * `prompts.get(server, name, args?)`. The same in `pda run`, `pda chat`, `pda batch` and `pda exec`.
 */
import type { Namespaces } from "../action/index.js";
import type { MultiMCP } from "../mcp_servers/index.js";

const optionalServer = (server: unknown) => (server === undefined ? undefined : String(server));

/** Prompt arguments are strings in MCP: other values are sent as their JSON text. */
function promptArgs(args: unknown): Record<string, string> {
  if (args === undefined || args === null) return {};
  if (typeof args !== "object" || Array.isArray(args))
    throw new TypeError("prompt arguments must be an object");
  return Object.fromEntries(
    Object.entries(args).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]),
  );
}

export function hubNamespaces(hub: MultiMCP): Namespaces {
  return {
    resources: {
      list: async ([server]) => hub.listResources(optionalServer(server)),
      read: async ([server, uri]) => hub.readResource(String(server), String(uri)),
      templates: async ([server]) => hub.listResourceTemplates(optionalServer(server)),
    },
    prompts: {
      list: async ([server]) => hub.listPrompts(optionalServer(server)),
      get: async ([server, name, args]) => hub.getPrompt(String(server), String(name), promptArgs(args)),
    },
  };
}
