/**
 * The hub's configuration: our YAML (`servers:` list) or the `{"mcpServers": {...}}` JSON of desktop MCP
 * clients, validated with zod so every error names file:line:field. `${VAR}` and `${VAR:-default}` expand
 * from the environment; a relative `cwd` resolves against the config file's folder (also the default cwd),
 * and `./` or `../` command/args resolve against the cwd.
 */
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { ConfigError } from "../../core/index.js";
import { parseConfigText } from "../../config/index.js";

const ID = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** A string with `${VAR}` / `${VAR:-default}` expanded; an unset variable without default is an error. */
function expanded(env: NodeJS.ProcessEnv) {
  return z.string().transform((text, ctx) =>
    text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_m, name: string, fallback?: string) => {
      const value = env[name];
      if (value !== undefined && value !== "") return value;
      if (fallback !== undefined) return fallback;
      ctx.addIssue({
        code: "custom",
        message: `environment variable ${name} is not set (write \${${name}:-default})`,
      });
      return "";
    }),
  );
}

/** `expand: false` for values that were expanded already (desktop entries converted to our shape). */
function schemas(env: NodeJS.ProcessEnv, expand = true) {
  const str = expand ? expanded(env) : z.string();
  const names = z.array(z.string().min(1)).default([]);
  const Server = z
    .object({
      id: z.string().regex(ID, "an id is letters, digits, _ or -, starting with a letter or _"),
      description: z.string().default(""),
      enabled: z.boolean().default(true),
      /** stdio: the program and its arguments. */
      command: str.optional(),
      args: z.array(str).default([]),
      env: z.record(z.string(), str).default({}),
      cwd: str.optional(),
      /** Streamable HTTP: the endpoint and extra headers (e.g. Authorization: Bearer ${TOKEN}). */
      url: str.pipe(z.url()).optional(),
      headers: z.record(z.string(), str).default({}),
      /** Per-call timeout; a call may ask for less. */
      timeout_ms: z.number().int().min(1).default(30_000),
      /** Time to start, initialise and list tools. */
      connect_timeout_ms: z.number().int().min(1).default(20_000),
      /** Only these tools are exposed (all when absent). */
      allow: z.array(z.string().min(1)).optional(),
      deny: names,
      /** Tools that need a human's approval before each call (ToolInfo.needsApproval). */
      needs_approval: names,
    })
    .strict()
    .superRefine((s, ctx) => {
      if (!s.command === !s.url)
        ctx.addIssue({
          code: "custom",
          message: "give either command (stdio) or url (Streamable HTTP), not both or neither",
        });
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

  /** Desktop clients' shape: unknown keys (autoApprove, alwaysAllow, ...) are tolerated, as they are there. */
  const DesktopServer = z
    .looseObject({
      type: z.enum(["stdio", "http", "streamable-http", "streamableHttp", "sse"]).optional(),
      command: str.optional(),
      args: z.array(str).optional(),
      env: z.record(z.string(), str).optional(),
      cwd: str.optional(),
      url: str.pipe(z.url()).optional(),
      headers: z.record(z.string(), str).optional(),
      disabled: z.boolean().optional(),
      timeout: z.number().int().min(1).optional(),
      description: z.string().optional(),
    })
    .superRefine((s, ctx) => {
      if (s.type === "sse")
        ctx.addIssue({
          code: "custom",
          path: ["type"],
          message: "the legacy SSE transport is not supported; use Streamable HTTP",
        });
      if (!s.command === !s.url)
        ctx.addIssue({
          code: "custom",
          message: "give either command (stdio) or url (Streamable HTTP), not both or neither",
        });
    });
  const DesktopConfig = z.looseObject({
    mcpServers: z.record(z.string().regex(ID, "a server name is letters, digits, _ or -"), DesktopServer),
  });
  return { Server, HubConfig, DesktopConfig };
}

type S = ReturnType<typeof schemas>;
export type ServerConfig = z.infer<S["Server"]>;
export type HubConfig = z.infer<S["HubConfig"]>;
/** What callers may pass in code: our shape before defaults, or the desktop shape. */
export type HubConfigInput = z.input<S["HubConfig"]> | z.input<S["DesktopConfig"]>;

/** The zod schema of our YAML shape (for docs and tools that want it). */
export const HubConfigSchema = schemas(process.env).HubConfig;

function fromDesktop(d: z.infer<S["DesktopConfig"]>): z.input<S["HubConfig"]> {
  return {
    servers: Object.entries(d.mcpServers).map(([id, s]) => {
      return {
        id,
        description: s.description ?? "",
        enabled: !s.disabled,
        ...(s.command !== undefined && {
          command: s.command,
          args: s.args ?? [],
          env: s.env ?? {},
          cwd: s.cwd,
        }),
        ...(s.url !== undefined && { url: s.url, headers: s.headers ?? {} }),
        ...(s.timeout !== undefined && { timeout_ms: s.timeout }),
      };
    }),
  };
}

const isRelative = (p: string) => p.startsWith("./") || p.startsWith("../");

function resolvePaths(config: HubConfig, baseDir: string): HubConfig {
  return {
    servers: config.servers.map((s) => {
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

/** Parse config text (YAML or JSON, either shape); `file` names the source in errors. */
export function parseHubConfig(file: string, text: string, options: LoadOptions = {}): HubConfig {
  const env = options.env ?? process.env;
  const s = schemas(env);
  const Either = z.union([s.DesktopConfig, z.looseObject({})]);
  const probe = parseConfigText(file, text, Either) as Record<string, unknown>;
  let parsed: HubConfig;
  if ("mcpServers" in probe) {
    // Validated (and expanded) in the desktop shape, so errors point at its lines; then only defaults apply.
    const desktop = fromDesktop(parseConfigText(file, text, s.DesktopConfig));
    const result = schemas(env, false).HubConfig.safeParse(desktop);
    if (!result.success) {
      const issue = result.error.issues[0]!;
      throw new ConfigError(`${file}: ${issue.path.join(".")}: ${issue.message}`);
    }
    parsed = result.data;
  } else {
    parsed = parseConfigText(file, text, s.HubConfig);
  }
  return resolvePaths(parsed, options.baseDir ?? dirname(resolve(file)));
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
