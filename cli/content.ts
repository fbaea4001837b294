/**
 * For `pda resources` and `pda prompts`: what the configured servers offer beside their tools, listed and read
 * from the command line as CODE reaches them (resources.list/read/templates, prompts.list/get).
 */
import chalk from "chalk";
import type { Command } from "commander";
import type { GetPromptResult, ReadResourceResult } from "@modelcontextprotocol/client";
import { ConfigError } from "../core/index.js";
import type { MultiMCP } from "../mcp_servers/index.js";
import { withHub } from "./hub.js";

/** Only the named server is started; a name the config does not hold is a usage error naming those it does. */
export function onServer<T>(
  cmd: Command,
  server: string | undefined,
  body: (hub: MultiMCP) => Promise<T>,
): Promise<T> {
  return withHub(cmd, server ? { only: [server] } : {}, async (hub) => {
    if (server && !hub.status().some((s) => s.id === server)) {
      const known = hub
        .status()
        .map((s) => s.id)
        .join(", ");
      throw new ConfigError(`no server named "${server}" (known: ${known})`);
    }
    return body(hub);
  });
}

export const print = (line: string) => process.stdout.write(`${line}\n`);

export function printContents(result: ReadResourceResult): void {
  for (const c of result.contents) {
    if ("text" in c) print(c.text);
    else
      print(chalk.dim(`[${c.mimeType ?? "binary"} ${c.uri}: ${Math.floor((c.blob.length * 3) / 4)} bytes]`));
  }
}

export function printMessages(result: GetPromptResult): void {
  for (const m of result.messages) {
    const c = m.content;
    const body =
      c.type === "text" ? c.text : c.type === "resource" ? `[resource ${c.resource.uri}]` : `[${c.type}]`;
    print(`${chalk.bold(m.role)}: ${body}`);
  }
}

/** `--json` after a subcommand is taken by its parent, which has the option too. */
export const wantsJson = (opts: { json?: boolean }, cmd: Command) =>
  Boolean(opts.json ?? (cmd.optsWithGlobals() as { json?: boolean }).json);

/** `--arg name=value`, repeatable. */
export function collectArg(value: string, previous: Record<string, string>): Record<string, string> {
  const eq = value.indexOf("=");
  if (eq <= 0) throw new ConfigError(`--arg: expected name=value, got "${value}"`);
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}
