/**
 * Tool names and routing. Names resolve server first: `server.tool` always means that server's tool, since a
 * server id cannot hold the separator (config.ts) and the text before the first separator is compared with
 * the configured ids before anything else. A tool whose own name holds the separator (a server registering
 * `bank.transfer`) is reachable only as `itsServer.bank.transfer`, never by plain name, so it cannot take
 * another server's route, nor the approval and allow/deny checks that go with it.
 */
import type { Tool } from "@modelcontextprotocol/client";
import { closest } from "fastest-levenshtein";
import {
  HOST_NAMESPACES,
  SANDBOX_GLOBALS,
  ToolError,
  stripControls,
  stripControlsDeep,
  type ToolInfo,
} from "../../core/index.js";
import type { ServerConfig } from "./config.js";

export const SEPARATOR = ".";

/** Names the sandbox defines itself (one list, core/tool-names.ts): a tool called so gets an alias there. */
function isSandboxBuiltin(name: string): boolean {
  return SANDBOX_GLOBALS.has(name) || HOST_NAMESPACES.has(name);
}

/** What routing needs of a server connection. */
export interface Routable {
  readonly id: string;
  readonly config: Pick<ServerConfig, "allow" | "deny" | "needs_approval" | "auto_approve" | "idempotent">;
  readonly tools: Tool[];
}

export interface Route<C extends Routable> {
  conn: C;
  info: ToolInfo;
}

/** A problem with a name a server gave one of its tools (a hub event and in `pda servers`). */
export interface ToolNameWarning {
  server: string;
  tool: string;
  message: string;
}

export interface Routes<C extends Routable> {
  list: ToolInfo[];
  /** By `server.tool`, and by plain name for tools that may be called so. */
  byName: Map<string, Route<C>>;
  warnings: ToolNameWarning[];
}

/** Whether the server's allow/deny lists let `tool` be called. */
export function permitted(config: Routable["config"], tool: string): boolean {
  return (!config.allow || config.allow.includes(tool)) && !config.deny.includes(tool);
}

// eslint-disable-next-line no-control-regex -- a tool name with control characters is refused
const CONTROL = /[\x00-\x1f\x7f-\x9f]/;

/**
 * The callable tools of these servers, in order, with their descriptions and schemas stripped of control
 * sequences. A name holding control characters cannot be shown or typed faithfully: that tool is left out.
 */
export function buildRoutes<C extends Routable>(conns: Iterable<C>): Routes<C> {
  const servers = [...conns];
  const plainCount = new Map<string, number>();
  for (const conn of servers)
    for (const t of conn.tools) plainCount.set(t.name, (plainCount.get(t.name) ?? 0) + 1);
  const list: ToolInfo[] = [];
  const byName = new Map<string, Route<C>>();
  const warnings: ToolNameWarning[] = [];
  const warn = (server: string, tool: string, message: string) =>
    warnings.push({ server, tool: stripControls(tool), message });
  for (const conn of servers) {
    for (const t of conn.tools) {
      const qualified = `${conn.id}${SEPARATOR}${t.name}`;
      if (CONTROL.test(t.name)) {
        warn(conn.id, t.name, `tool name ${JSON.stringify(t.name)} holds control characters; not exposed`);
        continue;
      }
      if (byName.has(qualified)) {
        warn(conn.id, t.name, `tool "${t.name}" is listed twice; the first is used`);
        continue;
      }
      const dotted = t.name.includes(SEPARATOR);
      if (dotted)
        warn(
          conn.id,
          t.name,
          `tool name "${t.name}" holds the separator "${SEPARATOR}": callable only as "${qualified}"`,
        );
      if (isSandboxBuiltin(t.name))
        warn(conn.id, t.name, `tool name "${t.name}" is a sandbox built-in: call it as "${qualified}"`);
      const info: ToolInfo = {
        server: conn.id,
        name: t.name,
        qualified,
        unique: !dotted && plainCount.get(t.name) === 1,
        description: stripControls(t.description ?? ""),
        inputSchema: stripControlsDeep(t.inputSchema) as Record<string, unknown>,
        ...(t.outputSchema && { outputSchema: stripControlsDeep(t.outputSchema) as Record<string, unknown> }),
        ...(needsApproval(conn.config, t.name) && { needsApproval: true }),
        ...(safeToRepeat(conn.config, t) && { safeToRepeat: true }),
      };
      list.push(info);
      byName.set(qualified, { conn, info });
    }
  }
  // Plain names never hold the separator and qualified ones always do, so the two cannot collide.
  for (const info of list) if (info.unique) byName.set(info.name, byName.get(info.qualified)!);
  return { list, byName, warnings };
}

/**
 * The server and tool a name means. The text before the first separator, when it is a configured server's
 * id, decides the server whatever tools other servers have; a server that is not up still gets its
 * qualified names (the caller learns it is unavailable, not that the tool does not exist), unless its
 * allow/deny lists forbid the tool.
 */
/** The server says calling it twice changes nothing more (MCP annotations), or the config says so. */
function safeToRepeat(
  c: Pick<ServerConfig, "idempotent">,
  t: { name: string; annotations?: { readOnlyHint?: boolean; idempotentHint?: boolean } },
): boolean {
  return (
    t.annotations?.readOnlyHint === true ||
    t.annotations?.idempotentHint === true ||
    c.idempotent.includes(t.name) ||
    c.idempotent.includes("*")
  );
}

/** Listed in needs_approval (or "*" there) and not exempted by auto_approve. */
function needsApproval(c: Pick<ServerConfig, "needs_approval" | "auto_approve">, tool: string): boolean {
  return (
    (c.needs_approval.includes(tool) || c.needs_approval.includes("*")) && !c.auto_approve.includes(tool)
  );
}

export function resolveName<C extends Routable & { readonly state: string }>(
  name: string,
  servers: ReadonlyMap<string, C>,
  routes: Routes<C>,
): { conn: C; info?: ToolInfo; tool: string } {
  const sep = name.indexOf(SEPARATOR);
  const conn = sep > 0 ? servers.get(name.slice(0, sep)) : undefined;
  if (conn) {
    const hit = routes.byName.get(name);
    if (hit) return { conn: hit.conn, info: hit.info, tool: hit.info.name };
    const tool = name.slice(sep + 1);
    if (conn.state !== "ready" && permitted(conn.config, tool)) return { conn, tool };
    const own = routes.list.filter((t) => t.server === conn.id).map((t) => t.qualified);
    const hint = own.length ? ` (closest: ${closest(name, own)})` : "";
    throw new ToolError("TOOL_NOT_FOUND", name, `server "${conn.id}" has no tool "${tool}"${hint}`);
  }
  const hit = sep === -1 ? routes.byName.get(name) : undefined;
  if (hit) return { conn: hit.conn, info: hit.info, tool: hit.info.name };
  const same = routes.list.filter((t) => t.name === name);
  if (sep === -1 && same.length > 1) {
    const options = same.map((t) => t.qualified).join(", ");
    throw new ToolError("TOOL_NOT_FOUND", name, `tool name "${name}" is ambiguous; use one of: ${options}`);
  }
  // A dotted tool name used plain: say which qualified name reaches it.
  if (same.length) {
    const options = same.map((t) => t.qualified).join(", ");
    throw new ToolError("TOOL_NOT_FOUND", name, `no tool named "${name}"; did you mean ${options}?`);
  }
  const known = routes.list.map((t) => t.qualified);
  const hint = known.length
    ? ` (closest: ${closest(name, [...known, ...routes.list.map((t) => t.name)])})`
    : "";
  throw new ToolError("TOOL_NOT_FOUND", name, `no tool named "${name}"${hint}`);
}
