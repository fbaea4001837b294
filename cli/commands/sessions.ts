/** `pda sessions`: its options, help and action; what it shares with other commands is in ../memory.ts. */
import chalk from "chalk";
import type { Command } from "commander";
import { DisplayStatus, type SessionListItem } from "../../memory/index.js";
import { runCommand } from "../context.js";
import {
  dbPathOf,
  globals,
  openExisting,
  out,
  positiveInt,
  printJson,
  quietOnClosedPipe,
  sessionLine,
  statusOption,
} from "../memory.js";

export function register(program: Command): void {
  program
    .command("sessions")
    .description("past sessions, newest first")
    .option("--search <words>", "only sessions whose query, requirement, summary or answer has these words")
    .option("--status <status>", `one of ${DisplayStatus.options.join(", ")}`)
    .option("--limit <n>", "how many (default 20)", "20")
    .option("--json", "print the list as JSON")
    .action((opts: { search?: string; status?: string; limit: string; json?: boolean }, cmd: Command) =>
      runCommand(async () => {
        quietOnClosedPipe();
        const query = {
          search: opts.search,
          status: opts.status === undefined ? undefined : statusOption(opts.status),
          limit: positiveInt("--limit", opts.limit),
        };
        const store = openExisting(globals(cmd));
        let items: SessionListItem[] = [];
        try {
          items = store?.listSessions(query) ?? [];
        } finally {
          store?.close();
        }
        if (opts.json) return printJson(items);
        if (items.length === 0) return out(chalk.dim(`no sessions (store: ${dbPathOf(globals(cmd))})`));
        for (const s of items) out(sessionLine(s));
      }),
    );
}
