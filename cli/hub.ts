/**
 * `pda servers`, `pda tools` and `pda call`: the hub's state, its tool list, and one tool call.
 * Exit codes (DESIGN.md): 0 done; 1 the tool failed; 2 bad usage or config; 3 a server could not be reached.
 */
import { statSync } from "node:fs";
import { basename, resolve } from "node:path";
import chalk from "chalk";
import type { Command } from "commander";
import { configDir, configFile } from "../config/index.js";
import { createChannel } from "../hil/index.js";
import {
  ConfigError,
  ToolError,
  defaultDbPath,
  summaryLine,
  type ToolInfo,
  type ToolListCache,
} from "../core/index.js";
import { SessionStore } from "../memory/index.js";
import { MultiMCP, type HubEvent, type MultiMCPOptions } from "../mcp_servers/index.js";
import { answerElicitations } from "./elicit.js";
import { runCommand } from "./context.js";

interface HubCliOptions {
  config?: string;
  db?: string;
  hil?: string;
  verbose?: boolean;
}

/**
 * The store's tool-list cache (as `--db` / PDA_DB names it, like cli/runtime's dbPath), or none when the store
 * cannot be opened: the cache only saves starting servers, so these commands still work without it.
 */
function openCache(opts: HubCliOptions): { cache?: ToolListCache; close(): void } {
  try {
    const store = SessionStore.open(opts.db ?? process.env.PDA_DB ?? defaultDbPath());
    return { cache: store.toolLists(), close: () => store.close() };
  } catch {
    return { close: () => {} };
  }
}

/**
 * The hub config file for `--config`: a file given directly (other than profiles.yaml, e.g. a desktop
 * client's mcpServers JSON) is the hub config itself; otherwise mcp_server_config.yaml in the config folder.
 */
export function hubConfigFile(option?: string): string {
  const given = option ?? process.env.PDA_CONFIG;
  if (given) {
    const abs = resolve(given);
    let isFile = false;
    try {
      isFile = statSync(abs).isFile();
    } catch {
      // configDir below reports the missing path
    }
    if (isFile && basename(abs) !== "profiles.yaml") return abs;
  }
  // A folder may hold only some files: without its own, the bundled servers.
  return configFile(configDir(given), "mcp_server_config.yaml");
}

export const FORM_HELP =
  "who answers a server's forms (elicitation): terminal, scripted:<file.yaml>, or policy:<name> (policy:defaults accepts a form's defaults; default: terminal on a TTY, else policy:fail)";

export async function withHub<T>(
  cmd: Command,
  options: MultiMCPOptions,
  body: (hub: MultiMCP) => Promise<T>,
): Promise<T> {
  const opts = cmd.optsWithGlobals() as HubCliOptions;
  const onEvent = opts.verbose
    ? (e: HubEvent) => process.stderr.write(chalk.dim(`${describeEvent(e)}\n`))
    : undefined;
  // Made first: a bad --hil is a usage error before any server starts.
  const human = createChannel(opts.hil, {});
  const store = openCache(opts);
  let hub: MultiMCP;
  try {
    hub = await MultiMCP.start(hubConfigFile(opts.config), { cache: store.cache, ...options, onEvent });
  } catch (e) {
    store.close();
    throw e;
  }
  answerElicitations(hub, human);
  // Ctrl-C must still end the servers this command started.
  const onSignal = () => void hub.close().finally(() => process.exit(130));
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    return await body(hub);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await hub.close();
    store.close();
  }
}

function describeEvent(e: HubEvent): string {
  switch (e.type) {
    case "server_state":
      return `[${e.server}] ${e.state}${e.error ? `: ${e.error}` : ""}`;
    case "log":
      return `[${e.server}] ${e.level}: ${typeof e.data === "string" ? e.data : JSON.stringify(e.data)}`;
    case "progress":
      return `[${e.server}] ${e.tool} ${e.progress}${e.total ? `/${e.total}` : ""}${e.message ? ` ${e.message}` : ""}`;
    case "garbage":
      return `[${e.server}] not JSON-RPC on stdout: ${e.line}`;
    case "tools_changed":
      return `[${e.server}] ${e.count} tools`;
    case "tool_warning":
      return `[${e.server}] warning: ${e.message}`;
    case "elicitation":
      return `[${e.server}] elicitation "${e.message}" → ${e.action}${e.reason ? ` (${e.reason})` : ""}`;
    case "sampling":
      return `[${e.server}] sampling → ${e.ok ? `answered by ${e.model}` : `refused (${e.reason})`}`;
  }
}

/** A one-line signature from a JSON Schema: `add(a: number, b: number)`, optional ones with `?`. */
export function signature(tool: ToolInfo): string {
  const props = (tool.inputSchema.properties ?? {}) as Record<string, { type?: unknown }>;
  const required = new Set((tool.inputSchema.required as string[] | undefined) ?? []);
  const params = Object.entries(props).map(([name, p]) => {
    const type = Array.isArray(p.type) ? p.type.join("|") : String(p.type ?? "any");
    return `${name}${required.has(name) ? "" : "?"}: ${type}`;
  });
  return `${tool.qualified}(${params.join(", ")})`;
}

/**
 * A value as JSON that is safe to print: JSON escapes C0 controls (ESC among them) but not DEL and the C1
 * range, which some terminals obey (0x9b is CSI); those are escaped too, so the JSON means the same.
 */
export function terminalJson(value: unknown): string {
  return (JSON.stringify(value, null, 2) ?? "undefined").replace(
    /[\u007f-\u009f]/g,
    (c) => `\\u00${c.charCodeAt(0).toString(16)}`,
  );
}

/** CLI exit code for a failed call. */
function exitCodeFor(e: ToolError): number {
  if (e.serverLost) return 3;
  if (e.code === "TOOL_INVALID_ARGS" || e.code === "TOOL_NOT_FOUND") return 2;
  return 1;
}

export function registerHub(program: Command): void {
  program
    .command("servers")
    .description(
      "the configured MCP servers: running, cached (tools known, not started), failed or disabled, with tool " +
        "count and last error (exit 3 if one failed); servers not cached yet are started",
    )
    .option("--json", "print the status as JSON")
    .action((opts: { json?: boolean }, cmd: Command) =>
      runCommand(() =>
        withHub(cmd, {}, async (hub) => {
          const status = hub.status();
          if (opts.json) process.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
          else {
            for (const s of status) {
              const colour =
                s.state === "ready"
                  ? chalk.green
                  : s.state === "cached"
                    ? chalk.cyan
                    : s.state === "disabled"
                      ? chalk.dim
                      : chalk.red;
              const error = s.lastError && s.state !== "ready" ? `  ${chalk.red(s.lastError)}` : "";
              process.stdout.write(
                `${chalk.bold(s.id.padEnd(14))} ${colour(s.state.padEnd(9))} ${String(s.tools).padStart(3)} tools  ${chalk.dim(s.transport)}${error}\n`,
              );
              for (const w of s.warnings ?? []) process.stdout.write(`  ${chalk.yellow("warning")} ${w}\n`);
            }
          }
          return status.some((s) => s.state === "failed") ? 3 : 0;
        }),
      ),
    );

  program
    .command("tools")
    .description("list the tools of the configured MCP servers")
    .option("--server <id>", "only this server's tools (and only this server is started)")
    .option("--json", "print name, description and input schema of each tool as JSON")
    .option("--refresh", "start the servers and list their tools again, replacing the cached lists")
    .action((opts: { server?: string; json?: boolean; refresh?: boolean }, cmd: Command) =>
      runCommand(() =>
        withHub(
          cmd,
          { ...(opts.server && { only: [opts.server] }), refresh: !!opts.refresh },
          async (hub) => {
            if (opts.server && !hub.status().some((s) => s.id === opts.server)) {
              throw new ConfigError(
                `--server: no server named "${opts.server}" (known: ${hub
                  .status()
                  .map((s) => s.id)
                  .join(", ")})`,
              );
            }
            const tools = hub.tools().filter((t) => !opts.server || t.server === opts.server);
            if (opts.json) {
              process.stdout.write(`${JSON.stringify(tools, null, 2)}\n`);
            } else {
              for (const t of tools) {
                const approval = t.needsApproval ? chalk.yellow(" [needs approval]") : "";
                process.stdout.write(
                  `${chalk.bold(signature(t))}${approval}\n  ${chalk.dim(summaryLine(t.description))}\n`,
                );
              }
            }
            const failed = hub.status().filter((s) => s.state === "failed");
            for (const s of failed) process.stderr.write(`${chalk.red("warning")} ${s.id}: ${s.lastError}\n`);
            return failed.length > 0 && tools.length === 0 ? 3 : 0;
          },
        ),
      ),
    );

  program
    .command("call")
    .description(
      "call one tool and print its result as JSON (exit 1 tool error, 2 bad usage, 3 server unreachable)",
    )
    .argument("<tool>", "server.tool (or a tool name unique across servers)")
    .argument("[json]", "the arguments as a JSON object", "{}")
    .option("--hil <channel>", FORM_HELP)
    .option("--timeout <ms>", "per-call timeout in milliseconds", (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n <= 0)
        throw new ConfigError(`--timeout: expected a positive whole number of ms, got "${v}"`);
      return n;
    })
    .action((tool: string, json: string, opts: { timeout?: number }, cmd: Command) =>
      runCommand(async () => {
        let args: unknown;
        try {
          args = JSON.parse(json);
        } catch (e) {
          throw new ConfigError(`arguments are not valid JSON: ${(e as Error).message}`);
        }
        if (args === null || typeof args !== "object" || Array.isArray(args)) {
          throw new ConfigError(`arguments must be a JSON object like '{"a": 1}', got ${json}`);
        }
        const dot = tool.indexOf(".");
        // A qualified name needs only its own server started.
        const only = dot > 0 ? [tool.slice(0, dot)] : undefined;
        return withHub(cmd, only ? { only } : {}, async (hub) => {
          if (only && !hub.status().some((s) => s.id === only[0])) {
            throw new ConfigError(
              `no server named "${only[0]}" (known: ${hub
                .status()
                .map((s) => s.id)
                .join(", ")})`,
            );
          }
          try {
            const value = await hub.call(tool, args as Record<string, unknown>, { timeoutMs: opts.timeout });
            process.stdout.write(`${terminalJson(value)}\n`);
            return 0;
          } catch (e) {
            if (!(e instanceof ToolError)) throw e;
            process.stderr.write(`${chalk.red("error")} ${e.code}: ${e.message}\n`);
            return exitCodeFor(e);
          }
        });
      }),
    );
}
