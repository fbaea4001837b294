/**
 * `pda resources` and `pda prompts`: what the configured servers offer beside their tools, listed and read
 * from the command line as CODE reaches them (resources.list/read/templates, prompts.list/get).
 */
import chalk from "chalk";
import type { Command } from "commander";
import type { GetPromptResult, ReadResourceResult } from "@modelcontextprotocol/sdk/types.js";
import { ConfigError, summaryLine } from "../core/index.js";
import type { MultiMCP } from "../mcp_servers/index.js";
import { runCommand } from "./context.js";
import { terminalJson, withHub } from "./hub.js";

/** Only the named server is started; a name the config does not hold is a usage error naming those it does. */
function onServer<T>(
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

const print = (line: string) => process.stdout.write(`${line}\n`);

function printContents(result: ReadResourceResult): void {
  for (const c of result.contents) {
    if ("text" in c) print(c.text);
    else
      print(chalk.dim(`[${c.mimeType ?? "binary"} ${c.uri}: ${Math.floor((c.blob.length * 3) / 4)} bytes]`));
  }
}

function printMessages(result: GetPromptResult): void {
  for (const m of result.messages) {
    const c = m.content;
    const body =
      c.type === "text" ? c.text : c.type === "resource" ? `[resource ${c.resource.uri}]` : `[${c.type}]`;
    print(`${chalk.bold(m.role)}: ${body}`);
  }
}

/** `--json` after a subcommand is taken by its parent, which has the option too. */
const wantsJson = (opts: { json?: boolean }, cmd: Command) =>
  Boolean(opts.json ?? (cmd.optsWithGlobals() as { json?: boolean }).json);

/** `--arg name=value`, repeatable. */
function collectArg(value: string, previous: Record<string, string>): Record<string, string> {
  const eq = value.indexOf("=");
  if (eq <= 0) throw new ConfigError(`--arg: expected name=value, got "${value}"`);
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

export function registerContent(program: Command): void {
  const resources = program
    .command("resources")
    .description("the MCP resources and resource templates of the configured servers; `read` prints one")
    .argument("[server]", "only this server (and only it is started)")
    .option("--json", "print them as JSON")
    .action((server: string | undefined, opts: { json?: boolean }, cmd: Command) =>
      runCommand(() =>
        onServer(cmd, server, async (hub) => {
          const [list, templates] = await Promise.all([
            hub.listResources(server),
            hub.listResourceTemplates(server),
          ]);
          if (opts.json) print(terminalJson({ resources: list, templates }));
          else {
            for (const r of list)
              print(
                `${chalk.bold(`${r.server} ${r.uri}`)}  ${r.name}${r.mimeType ? chalk.dim(` ${r.mimeType}`) : ""}`,
              );
            for (const t of templates)
              print(`${chalk.bold(`${t.server} ${t.uriTemplate}`)}  ${t.name} ${chalk.dim("(template)")}`);
            if (list.length + templates.length === 0) print(chalk.dim("no resources"));
          }
          return 0;
        }),
      ),
    );
  resources
    .command("read")
    .description("print one resource's contents (text as is, binary as its size)")
    .argument("<server>", "the server that has it")
    .argument("<uri>", "the resource's URI")
    .option("--json", "print the whole result as JSON")
    .action((server: string, uri: string, opts: { json?: boolean }, cmd: Command) =>
      runCommand(() =>
        onServer(cmd, server, async (hub) => {
          const result = await hub.readResource(server, uri);
          if (wantsJson(opts, cmd)) print(terminalJson(result));
          else printContents(result);
          return 0;
        }),
      ),
    );

  const prompts = program
    .command("prompts")
    .description("the MCP prompts of the configured servers; `get` prints one filled in")
    .argument("[server]", "only this server (and only it is started)")
    .option("--json", "print them as JSON")
    .action((server: string | undefined, opts: { json?: boolean }, cmd: Command) =>
      runCommand(() =>
        onServer(cmd, server, async (hub) => {
          const list = await hub.listPrompts(server);
          if (opts.json) print(terminalJson(list));
          else {
            for (const p of list) {
              const args = (p.arguments ?? []).map((a) => (a.required ? a.name : `${a.name}?`)).join(", ");
              print(
                `${chalk.bold(`${p.server} ${p.name}(${args})`)}  ${chalk.dim(summaryLine(p.description ?? ""))}`,
              );
            }
            if (list.length === 0) print(chalk.dim("no prompts"));
          }
          return 0;
        }),
      ),
    );
  prompts
    .command("get")
    .description("print a prompt's messages with its arguments filled in")
    .argument("<server>", "the server that has it")
    .argument("<name>", "the prompt's name")
    .option("--arg <name=value>", "a prompt argument (repeatable)", collectArg, {})
    .option("--json", "print the whole result as JSON")
    .action(
      (server: string, name: string, opts: { arg: Record<string, string>; json?: boolean }, cmd: Command) =>
        runCommand(() =>
          onServer(cmd, server, async (hub) => {
            const result = await hub.getPrompt(server, name, opts.arg);
            if (wantsJson(opts, cmd)) print(terminalJson(result));
            else printMessages(result);
            return 0;
          }),
        ),
    );
}
