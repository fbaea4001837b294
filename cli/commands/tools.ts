/** `pda tools`: its options, help and action; what it shares with other commands is in ../hub.ts. */
import chalk from "chalk";
import type { Command } from "commander";
import { ConfigError, summaryLine, toolSignature } from "../../core/index.js";
import { runCommand } from "../context.js";
import { withHub } from "../hub.js";

export function register(program: Command): void {
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
                  `${chalk.bold(toolSignature(t))}${approval}\n  ${chalk.dim(summaryLine(t.description))}\n`,
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
}
