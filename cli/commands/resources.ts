/** `pda resources`: its options, help and action; what it shares with other commands is in ../content.ts. */
import chalk from "chalk";
import type { Command } from "commander";
import { runCommand } from "../context.js";
import { terminalJson } from "../hub.js";
import { onServer, print, printContents, wantsJson } from "../content.js";

export function register(program: Command): void {
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
}
