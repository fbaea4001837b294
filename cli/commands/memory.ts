/** `pda memory`: its options, help and action; what it shares with other commands is in ../memory.ts. */
import chalk from "chalk";
import type { Command } from "commander";
import { ConfigError } from "../../core/index.js";
import { type MemoryHit, type ToolStat } from "../../memory/index.js";
import { runCommand } from "../context.js";
import {
  fraction,
  globals,
  hitLines,
  openExisting,
  out,
  positiveInt,
  printJson,
  quietOnClosedPipe,
  statLine,
  withStore,
} from "../memory.js";

export function register(program: Command): void {
  const memory = program.command("memory").description("what the agent remembers from past sessions");
  memory
    .command("search")
    .description("the past sessions memory search returns for a text (solutions and warnings)")
    .argument("<text>", "a query, as the agent would be asked it")
    .option("--limit <n>", "most hits (default 5)", "5")
    .option("--threshold <x>", "minimum relevance 0..1 (default 0.5)", "0.5")
    .option("--json", "print the hits as JSON")
    .action((text: string, opts: { limit: string; threshold: string; json?: boolean }, cmd: Command) =>
      runCommand(async () => {
        quietOnClosedPipe();
        const options = { limit: positiveInt("--limit", opts.limit), threshold: fraction(opts.threshold) };
        const store = openExisting(globals(cmd));
        let hits: MemoryHit[] = [];
        try {
          hits = store?.searchMemory(text, options) ?? [];
        } finally {
          store?.close();
        }
        if (opts.json) return printJson(hits);
        if (hits.length === 0) return out(chalk.dim("no past session is relevant enough"));
        for (const h of hits) out(hitLines(h));
      }),
    );

  memory
    .command("remember")
    .description(
      "let memory reuse a session a person answered questions in (by default their answers stay in that session)",
    )
    .argument("<id>", "session id (a unique prefix is enough)")
    .option("--json", 'print {"session_id", "remembered": true} as JSON (errors as JSON too)')
    .action((id: string, opts: { json?: boolean }, cmd: Command) =>
      runCommand(async () => {
        const full = withStore(globals(cmd), (store) => store.rememberHumanAnswers(id));
        if (opts.json) return printJson({ session_id: full, remembered: true });
        out(`memory may now reuse session ${full} and the answers given in it`);
      }),
    );

  memory
    .command("tools")
    .description("tool statistics: calls, success rate, latency percentiles, error kinds")
    .option("--since <iso-time>", "only calls from this time on")
    .option("--limit <n>", "most tools (default 50)", "50")
    .option("--json", "print the statistics as JSON")
    .action((opts: { since?: string; limit: string; json?: boolean }, cmd: Command) =>
      runCommand(async () => {
        quietOnClosedPipe();
        const limit = positiveInt("--limit", opts.limit);
        if (opts.since !== undefined && Number.isNaN(Date.parse(opts.since))) {
          throw new ConfigError(`--since must be an ISO date or time, got "${opts.since}"`);
        }
        const since = opts.since === undefined ? undefined : new Date(opts.since).toISOString();
        const store = openExisting(globals(cmd));
        let stats: ToolStat[] = [];
        try {
          stats = store?.toolStats({ since, limit }) ?? [];
        } finally {
          store?.close();
        }
        if (opts.json) return printJson(stats);
        if (stats.length === 0) return out(chalk.dim("no tool calls logged"));
        for (const s of stats) out(statLine(s));
      }),
    );
}
