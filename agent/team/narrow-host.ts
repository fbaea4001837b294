/**
 * An agent's narrow view of the hub. The loop sees only the allowed tools (prompts, ranking, code guard), so
 * the model is never offered the others. The sandbox still binds every tool name (sandboxView), so a call
 * that slips past the guard — `callTool(name)` with a computed name — reaches the narrow host and is refused
 * there with a ToolError TOOL_NOT_ALLOWED, logged in the agent's session like any failed call.
 */
import type { Namespaces, runCode } from "../../action/index.js";
import { ToolError, type ToolHost, type ToolInfo } from "../../core/index.js";
import { toolAllowed } from "./config.js";

function resolveTool(host: ToolHost, name: string): ToolInfo | undefined {
  return host.tools().find((t) => t.qualified === name || (t.unique && t.name === name));
}

/**
 * Each agent's share of a hub list, by the list array and the agent's patterns: the same array while the hub's
 * list is the same, so the tool ranker (memoised per list array) is built once per agent, not per session.
 */
const shares = new WeakMap<readonly ToolInfo[], Map<string, ToolInfo[]>>();

function allowedOf(all: ToolInfo[], patterns: readonly string[]): ToolInfo[] {
  let byPatterns = shares.get(all);
  if (!byPatterns) shares.set(all, (byPatterns = new Map()));
  const key = patterns.join("\n");
  let mine = byPatterns.get(key);
  if (!mine) byPatterns.set(key, (mine = all.filter((t) => toolAllowed(patterns, t))));
  return mine;
}

export function narrowHost(host: ToolHost, agent: string, patterns: readonly string[]): ToolHost {
  const allowed = () => allowedOf(host.tools(), patterns);
  return {
    tools: allowed,
    onCall: (listener) => host.onCall(listener),
    // The hub's whole picture: an agent should also know a server it may not use is down (it may hand over).
    ...(host.availability && { availability: () => host.availability!() }),
    call(name, args, options) {
      const info = resolveTool(host, name);
      if (info && !toolAllowed(patterns, info)) {
        const list = allowed().map((t) => t.qualified);
        return Promise.reject(
          new ToolError(
            "TOOL_NOT_ALLOWED",
            info.qualified,
            `${info.qualified} is not one of agent "${agent}"'s tools (it may use: ${list.join(", ") || "none"})`,
          ),
        );
      }
      return host.call(name, args, options);
    },
  };
}

/**
 * The sandbox for a narrow agent: tool names resolve against the whole hub (`all`), calls go through the
 * agent's own host (the loop's per-session view of narrowHost), which refuses the tools it does not allow.
 */
export function narrowExecute(execute: typeof runCode, all: () => ToolInfo[]): typeof runCode {
  return (code, host, limits, options) =>
    execute(
      code,
      { tools: all, call: (n, a, o) => host.call(n, a, o), onCall: (l) => host.onCall(l) },
      limits,
      options,
    );
}

/** Namespaces whose functions take a server first (optional for lists): narrowed to the agent's servers. */
const SERVER_NAMESPACES = ["resources", "prompts"] as const;

/**
 * The host functions a narrow agent gets: `resources.*` and `prompts.*` only of servers it has tools on
 * (memory as it is), so what a server outside its allowlist offers stays out of reach like its tools.
 */
export function narrowServices(
  services: Namespaces | undefined,
  host: ToolHost,
  agent: string,
  patterns: readonly string[],
): Namespaces | undefined {
  if (!services) return services;
  const servers = () =>
    new Set(
      host
        .tools()
        .filter((t) => toolAllowed(patterns, t))
        .map((t) => t.server),
    );
  const narrowed: Namespaces = { ...services };
  for (const ns of SERVER_NAMESPACES) {
    const fns = services[ns];
    if (!fns) continue;
    narrowed[ns] = Object.fromEntries(
      Object.entries(fns).map(([name, fn]) => [
        name,
        async (args: unknown[]) => {
          const mine = servers();
          const [server] = args;
          if (server === undefined) {
            const all = await fn(args);
            return Array.isArray(all)
              ? all.filter((r: { server?: string }) => mine.has(String(r.server)))
              : all;
          }
          if (!mine.has(String(server))) {
            throw new ToolError(
              "TOOL_NOT_ALLOWED",
              ns,
              `agent "${agent}" may use ${ns} only of its own servers (${[...mine].join(", ") || "none"}), not ${String(server)}`,
            );
          }
          return fn(args);
        },
      ]),
    );
  }
  return narrowed;
}
