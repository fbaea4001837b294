/** `pda servers`: its options, help and action; what it shares with other commands is in ../hub.ts. */
import chalk from "chalk";
import type { Command } from "commander";
import { runCommand } from "../context.js";
import { withHub } from "../hub.js";

export function register(program: Command): void {
  program
    .command("servers")
    .description(
      "the configured MCP servers: running, cached (tools known, not started), failed or disabled, with tool " +
        "count, the MCP revision it speaks and last error (exit 3 if one failed); servers not cached yet are started",
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
              // The MCP revision it speaks (a cached server: its era only, from when it last ran).
              const spoken = s.protocolVersion ?? (s.era === "modern" ? "2026-07-28" : s.era && "2025");
              const protocol = spoken ? ` ${chalk.dim(spoken)}` : "";
              process.stdout.write(
                `${chalk.bold(s.id.padEnd(14))} ${colour(s.state.padEnd(9))} ${String(s.tools).padStart(3)} tools  ${chalk.dim(s.transport)}${protocol}${error}\n`,
              );
              for (const w of s.warnings ?? []) process.stdout.write(`  ${chalk.yellow("warning")} ${w}\n`);
            }
          }
          return status.some((s) => s.state === "failed") ? 3 : 0;
        }),
      ),
    );
}
