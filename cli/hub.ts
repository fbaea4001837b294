/**
 * The hub at the terminal, shared by `pda servers`, `tools`, `call`, `resources`, `prompts` and `exec`: the hub
 * opened for one command, tool signatures, JSON for a terminal, and the exit code of a failed call.
 * Exit codes (DESIGN.md): 0 done; 1 the tool failed; 2 bad usage or config; 3 a server could not be reached.
 */
import { statSync } from "node:fs";
import { basename, resolve } from "node:path";
import chalk from "chalk";
import type { Command } from "commander";
import { configDir, configFile } from "../config/index.js";
import { createChannel } from "../hil/index.js";
import { ToolError, defaultDbPath, type ToolListCache } from "../core/index.js";
import { SessionStore } from "../memory/index.js";
import { MultiMCP, type HubEvent, type MultiMCPOptions } from "../mcp_servers/index.js";
import { answerElicitations } from "./elicit.js";
import { attachSampling } from "./sampling.js";

interface HubCliOptions {
  config?: string;
  db?: string;
  hil?: string;
  /** The model that answers servers' sampling requests (`pda call --model`). */
  model?: string;
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
  "who answers a server's forms (elicitation) and approves its sampling requests: terminal, scripted:<file.yaml>, or policy:<name> (policy:defaults accepts a form's defaults; default: terminal on a TTY, else policy:fail)";

export const SAMPLING_MODEL_HELP =
  "the model that answers a server's sampling requests, provider[:model] (default: models.yaml's sampling role, else its default model)";

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
  const sampling = attachSampling(hub, human, opts);
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
    await sampling.close();
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
export function exitCodeFor(e: ToolError): number {
  if (e.serverLost) return 3;
  if (e.code === "TOOL_INVALID_ARGS" || e.code === "TOOL_NOT_FOUND") return 2;
  return 1;
}
