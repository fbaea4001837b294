/**
 * The hub's configuration: our YAML (`servers:` list) or the files other MCP clients write, read as those
 * clients read them (desktop.ts), all validated with zod so every error names file:line:field. `${VAR}`,
 * `${VAR:-default}` and the editors' `${env:VAR}`, `${workspaceFolder}`, `${userHome}` expand; a relative `cwd`
 * resolves against the config file's folder (also the default cwd), and `./` or `../` command/args resolve
 * against the cwd.
 */
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { ConfigError } from "../../core/index.js";
import { parseConfigText } from "../../config/index.js";
import { PROTOCOLS, clientFormat, fromClient, jsonWithoutComments, type ClientFormat } from "./desktop.js";
import { expanded, type Expansion } from "./expand.js";

/**
 * A server's name: anything printable without a dot (the dot separates server and tool in `server.tool`);
 * code reaches a name that is not an identifier by its alias (core/tool-names.ts).
 */
// eslint-disable-next-line no-control-regex -- control characters are what is refused
export const SERVER_ID = /^[^.\x00-\x1f\x7f]{1,64}$/;
const ID_RULE = "a server name is 1-64 printable characters without a dot (the dot separates server.tool)";

/** `expand: false` for values that were expanded already (other clients' entries converted to our shape). */
function schemas(x: Expansion, expand = true) {
  const str = expand ? expanded(x) : z.string();
  const names = z.array(z.string().min(1)).default([]);
  /**
   * Enterprise-managed authorization (SEP-990, cross-app access): the person's ID token from this IdP is
   * exchanged there (RFC 8693) for an ID-JAG, which the MCP server's authorization server takes as a
   * jwt-bearer grant (RFC 7523). The token endpoint is discovered from `issuer` unless given.
   */
  const Idp = z
    .object({
      issuer: str.pipe(z.url()),
      token_endpoint: str.pipe(z.url()).optional(),
      /** pda's client at the IdP (the token exchange names it). */
      client_id: str.pipe(z.string().min(1)),
      client_secret: str.optional(),
    })
    .strict();
  const Auth = z.object({ idp: Idp }).strict();
  const Server = z
    .object({
      id: z.string().regex(SERVER_ID, ID_RULE),
      description: z.string().default(""),
      enabled: z.boolean().default(true),
      /** stdio: the program and its arguments. */
      command: str.optional(),
      args: z.array(str).default([]),
      env: z.record(z.string(), str).default({}),
      cwd: str.optional(),
      /** Streamable HTTP (or legacy SSE): the endpoint and extra headers (Authorization: Bearer ${TOKEN}). */
      url: str.pipe(z.url()).optional(),
      /** `sse` for servers that speak only the legacy HTTP+SSE transport (2024-11-05). */
      transport: z.enum(["stdio", "http", "sse"]).optional(),
      headers: z.record(z.string(), str).default({}),
      /** How pda gets this remote server's OAuth tokens when not by a person's login (see Idp). */
      auth: Auth.optional(),
      /**
       * Which MCP era to speak: `2025` the initialize handshake, `2026-07-28` the modern era only, `auto`
       * probe with server/discover and fall back to initialize. Default: `auto` over HTTP, `2025` over stdio.
       */
      protocol: z.enum(PROTOCOLS).optional(),
      /** Per-call timeout; a call may ask for less. */
      timeout_ms: z.number().int().min(1).default(30_000),
      /** Time to start, initialise and list tools. */
      connect_timeout_ms: z.number().int().min(1).default(20_000),
      /** Only these tools are exposed (all when absent). */
      allow: z.array(z.string().min(1)).optional(),
      deny: names,
      /** Tools that need a human's approval before each call (ToolInfo.needsApproval); "*" for all. */
      needs_approval: names,
      /** Tools exempt from needs_approval (what editors call autoApprove / alwaysAllow). */
      auto_approve: names,
      /**
       * Tools safe to call twice (ToolInfo.safeToRepeat) beside those the server annotates readOnlyHint or
       * idempotentHint: a resumed step makes a call of one that was in doubt again instead of asking; "*" for all.
       */
      idempotent: names,
      /**
       * Folders (or file:// URIs) the server may work in, answered to its roots/list; relative paths resolve
       * against the config file's folder. Absent: the hub's roots (the working directory).
       */
      roots: z.array(str.pipe(z.string().min(1))).optional(),
      /**
       * The server's `sampling/createMessage` requests (it asks pda's model): `ask` the person each time
       * (--hil), `allow` without asking (unattended runs), or `deny` them all.
       */
      sampling: z.enum(["ask", "allow", "deny"]).default("ask"),
    })
    .strict()
    .superRefine((s, ctx) => {
      if (!s.command === !s.url)
        ctx.addIssue({
          code: "custom",
          message: "give either command (stdio) or url (Streamable HTTP or SSE), not both or neither",
        });
      if (s.transport && (s.transport === "stdio") !== Boolean(s.command))
        ctx.addIssue({
          code: "custom",
          path: ["transport"],
          message: `transport ${s.transport} needs ${s.transport === "stdio" ? "command" : "url"}`,
        });
      if (s.auth && !s.url)
        ctx.addIssue({ code: "custom", path: ["auth"], message: "auth is for remote servers: it needs url" });
    });

  const HubConfig = z
    .object({
      servers: z.array(Server).superRefine((list, ctx) => {
        const seen = new Set<string>();
        list.forEach((s, i) => {
          if (seen.has(s.id))
            ctx.addIssue({ code: "custom", path: [i, "id"], message: `duplicate server id "${s.id}"` });
          seen.add(s.id);
        });
      }),
    })
    .strict();

  return { Server, HubConfig, Idp };
}

type S = ReturnType<typeof schemas>;
export type ServerConfig = z.infer<S["Server"]>;
/** A server's enterprise IdP (`auth.idp`), for cross-app access. */
export type IdpConfig = z.infer<S["Idp"]>;
export type HubConfig = z.infer<S["HubConfig"]>;
/** What callers may pass in code: our shape before defaults, or another client's shape (desktop.ts). */
export type HubConfigInput = z.input<S["HubConfig"]> | { mcpServers: Record<string, unknown> };

/** The zod schema of our YAML shape (for docs and tools that want it). */
export const HubConfigSchema = schemas({ env: process.env, workspace: process.cwd() }).HubConfig;

const isRelative = (p: string) => p.startsWith("./") || p.startsWith("../");

function resolvePaths(config: HubConfig, baseDir: string): HubConfig {
  return {
    servers: config.servers.map((s) => {
      const roots = s.roots?.map((r) => (/^[a-z][a-z0-9+.-]*:\/\//i.test(r) ? r : resolve(baseDir, r)));
      s = roots ? { ...s, roots } : s;
      if (!s.command) return s;
      const cwd = s.cwd === undefined ? baseDir : isAbsolute(s.cwd) ? s.cwd : resolve(baseDir, s.cwd);
      const fix = (p: string) => (isRelative(p) ? resolve(cwd, p) : p);
      return { ...s, cwd, command: fix(s.command), args: s.args.map(fix) };
    }),
  };
}

export interface LoadOptions {
  /** Folder relative paths resolve against (default: the config file's folder, else the process cwd). */
  baseDir?: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * Parse config text (YAML or JSON, ours or another client's shape); `file` names the source in errors and,
 * for other clients' files, tells whose rules apply (a Cline file's `timeout` is in seconds).
 */
export function parseHubConfig(file: string, text: string, options: LoadOptions = {}): HubConfig {
  const baseDir = options.baseDir ?? dirname(resolve(file));
  const x: Expansion = { env: options.env ?? process.env, workspace: workspaceOf(file, baseDir) };
  const source = file.endsWith(".json") ? jsonWithoutComments(text) : text;
  const probe = parseConfigText(file, source, z.unknown());
  const format: ClientFormat | undefined = clientFormat(file, probe);
  let parsed: HubConfig;
  if (format) {
    // Validated (and expanded) in that client's shape, so errors point at its lines; then only defaults apply.
    const converted = fromClient(format, file, source, x);
    const result = schemas(x, false).HubConfig.safeParse(converted);
    if (!result.success) {
      const issue = result.error.issues[0]!;
      throw new ConfigError(`${file}: ${issue.path.join(".")}: ${issue.message}`);
    }
    parsed = result.data;
  } else {
    parsed = parseConfigText(file, source, schemas(x).HubConfig);
  }
  return resolvePaths(parsed, baseDir);
}

/** What `${workspaceFolder}` means: the project a `.vscode/` or `.cursor/` folder belongs to, else the file's folder. */
function workspaceOf(file: string, baseDir: string): string {
  const dir = dirname(resolve(file));
  return /[\\/]\.(vscode|cursor|roo|windsurf|codeium)$/.test(dir) ? dirname(dir) : baseDir;
}

export function loadHubConfig(file: string, options: LoadOptions = {}): HubConfig {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new ConfigError(`cannot read ${file}: ${(e as Error).message}`, { cause: e });
  }
  return parseHubConfig(file, text, options);
}

/** Validate a config given as an object (either shape); errors name the field. */
export function hubConfigFromObject(value: unknown, options: LoadOptions = {}): HubConfig {
  return parseHubConfig("(config object)", JSON.stringify(value), {
    ...options,
    baseDir: options.baseDir ?? process.cwd(),
  });
}
