/**
 * MCP config files as other clients write them, read the way those clients read them:
 * - `mcpServers` (Claude Desktop, Cursor, Windsurf, Cline, Roo Code, Gemini CLI), with each client's units:
 *   Cline and Roo give `timeout` in seconds, Gemini CLI in milliseconds; a file of unknown origin is read as
 *   milliseconds unless the number is under 1000 (no one means a 60 ms call timeout: Cline's default is 60).
 * - `servers` as an object (VS Code's mcp.json) and `mcp.servers` (VS Code's settings.json).
 * - Windsurf's `serverUrl` and Gemini CLI's `httpUrl` (Streamable HTTP; Gemini's `url` is legacy SSE),
 *   `type: "sse"` (legacy SSE), `autoApprove` / `alwaysAllow` (approvals off for those tools), a start-up
 *   timeout (`connect_timeout_ms`, `startup_timeout_ms`, `startup_timeout_sec`), pda's `protocol` (the MCP
 *   era to speak), JSON with comments.
 */
import { basename, dirname } from "node:path";
import stripJsonComments from "strip-json-comments";
import { z } from "zod";
import { ConfigError } from "../../core/index.js";
import { parseConfigText } from "../../config/index.js";
import { expanded, type Expansion } from "./expand.js";

/** A server's `protocol` setting (connection.ts turns it into the SDK's version negotiation). */
export const PROTOCOLS = ["auto", "2025", "2026-07-28"] as const;

export type ClientFormat = "desktop" | "cline" | "gemini" | "vscode" | "vscode-settings";

/** JSON with comments and trailing commas as editors write it; line numbers are kept for errors. */
export function jsonWithoutComments(text: string): string {
  return stripJsonComments(text, { trailingCommas: true });
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Whose file this is, from its shape and name; undefined for ours (`servers:` list). Anything else is an
 * error that names the shapes pda reads.
 */
export function clientFormat(file: string, value: unknown): ClientFormat | undefined {
  if (isObject(value)) {
    if (isObject(value.mcpServers)) {
      const name = basename(file);
      const folder = basename(dirname(file));
      if (name === "cline_mcp_settings.json" || name === "mcp_settings.json" || folder === ".roo")
        return "cline";
      if (folder === ".gemini") return "gemini";
      return "desktop";
    }
    if (Array.isArray(value.servers)) return undefined;
    if (isObject(value.servers)) return "vscode";
    if (isObject(value.mcp) && isObject(value.mcp.servers)) return "vscode-settings";
  }
  throw new ConfigError(
    `${file}: not an MCP server config pda knows: expected \`servers:\` as a list (pda), \`mcpServers\` (Claude Desktop, Cursor, Windsurf, Cline, Roo Code, Gemini CLI), \`servers\` as an object (VS Code mcp.json) or \`mcp.servers\` (VS Code settings.json)`,
  );
}

function entrySchema(x: Expansion) {
  const str = expanded(x);
  const names = z.array(z.string().min(1)).optional();
  return z.looseObject({
    type: z.enum(["stdio", "http", "streamable-http", "streamableHttp", "sse"]).optional(),
    command: str.optional(),
    args: z.array(str).optional(),
    env: z.record(z.string(), str).optional(),
    cwd: str.optional(),
    url: str.optional(),
    serverUrl: str.optional(),
    httpUrl: str.optional(),
    headers: z.record(z.string(), str).optional(),
    disabled: z.boolean().optional(),
    timeout: z.number().positive().optional(),
    connect_timeout_ms: z.number().int().positive().optional(),
    startup_timeout_ms: z.number().int().positive().optional(),
    startup_timeout_sec: z.number().positive().optional(),
    description: z.string().optional(),
    autoApprove: names,
    alwaysAllow: names,
    needs_approval: names,
    /** pda's own per-server setting, also in these shapes: which MCP era to speak (config.ts). */
    protocol: z.enum(PROTOCOLS).optional(),
    envFile: z
      .string()
      .refine(() => false, "envFile is not read by pda: set the variables in env (values may be ${env:NAME})")
      .optional(),
  });
}
type Entry = z.infer<ReturnType<typeof entrySchema>>;

/** The call timeout in ms, in the unit that client uses. */
function timeoutMs(format: ClientFormat, t: number): number {
  if (format === "cline") return Math.round(t * 1000);
  if (format === "gemini") return Math.round(t);
  return Math.round(t < 1000 ? t * 1000 : t);
}

function endpoint(format: ClientFormat, e: Entry): { url?: string; transport?: "http" | "sse" } {
  if (e.httpUrl !== undefined) return { url: e.httpUrl, transport: "http" };
  if (e.serverUrl !== undefined) return { url: e.serverUrl, transport: e.type === "sse" ? "sse" : "http" };
  if (e.url === undefined) return {};
  const sse = e.type === "sse" || (format === "gemini" && e.type === undefined);
  return { url: e.url, transport: sse ? "sse" : "http" };
}

function toServer(format: ClientFormat, id: string, e: Entry): Record<string, unknown> {
  const { url, transport } = endpoint(format, e);
  const start = e.connect_timeout_ms ?? e.startup_timeout_ms ?? secondsToMs(e.startup_timeout_sec);
  const auto = [...(e.autoApprove ?? []), ...(e.alwaysAllow ?? [])];
  return {
    id,
    description: e.description ?? "",
    enabled: !e.disabled,
    ...(e.command !== undefined && { command: e.command, args: e.args ?? [], env: e.env ?? {}, cwd: e.cwd }),
    ...(url !== undefined && { url, transport, headers: e.headers ?? {} }),
    ...(e.timeout !== undefined && { timeout_ms: timeoutMs(format, e.timeout) }),
    ...(start !== undefined && { connect_timeout_ms: start }),
    ...(e.needs_approval && { needs_approval: e.needs_approval }),
    ...(e.protocol && { protocol: e.protocol }),
    ...(auto.length > 0 && { auto_approve: auto }),
  };
}

const secondsToMs = (s: number | undefined) => (s === undefined ? undefined : Math.round(s * 1000));

/** The file in pda's own shape (before defaults): validated and expanded in the client's shape first. */
export function fromClient(
  format: ClientFormat,
  file: string,
  text: string,
  x: Expansion,
): { servers: Record<string, unknown>[] } {
  const servers = z.record(z.string(), entrySchema(x));
  const shape =
    format === "vscode"
      ? z.looseObject({ servers })
      : format === "vscode-settings"
        ? z.looseObject({ mcp: z.looseObject({ servers }) })
        : z.looseObject({ mcpServers: servers });
  const parsed = parseConfigText(file, text, shape) as Record<string, unknown>;
  const entries = (
    format === "vscode"
      ? parsed.servers
      : format === "vscode-settings"
        ? (parsed.mcp as { servers: unknown }).servers
        : parsed.mcpServers
  ) as Record<string, Entry>;
  return { servers: Object.entries(entries).map(([id, e]) => toServer(format, id, e)) };
}
