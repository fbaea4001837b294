/** `pda prompts`: its options, help and action; what it shares with other commands is in ../content.ts. */
import chalk from "chalk";
import type { Command } from "commander";
import { summaryLine } from "../../core/index.js";
import { runCommand } from "../context.js";
import { terminalJson } from "../hub.js";
import { collectArg, onServer, print, printMessages, wantsJson } from "../content.js";

export function register(program: Command): void {
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
