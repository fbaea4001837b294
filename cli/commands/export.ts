/** `pda export`: its options, help and action; what it shares with other commands is in ../memory.ts. */
import { writeFileSync } from "node:fs";
import chalk from "chalk";
import type { Command } from "commander";
import { ConfigError } from "../../core/index.js";
import { runCommand } from "../context.js";
import { exportOtel, globals, quietOnClosedPipe, withStore } from "../memory.js";

export function register(program: Command): void {
  program
    .command("export")
    .description(
      "a session as JSON (the AgentSession schema), to a file or stdout; with --otel, as OpenTelemetry traces",
    )
    .argument("[id]", "session id or an unambiguous prefix of it")
    .option("--out <file>", "write here instead of stdout")
    .option("--batch <run>", "with --otel: every session of this batch run, under one span")
    .option(
      "--json",
      'errors as JSON; with --out, print {"session_id", "file"} (the session itself is always JSON)',
    )
    .addHelpText(
      "after",
      `
With --otel the session (its sub-agent sessions under the steps that called them) is sent as OpenTelemetry
traces with its stored times instead, to the OTLP endpoint the standard OTEL_* variables name.`,
    )
    .action((id: string | undefined, opts: { out?: string; batch?: string; json?: boolean }, cmd: Command) =>
      runCommand(async () => {
        const g = globals(cmd);
        if (g.otel) return exportOtel(g, id, opts.batch);
        if (opts.batch)
          throw new ConfigError("pda export --batch: only with --otel (batch runs are sent as traces)");
        if (!id) throw new ConfigError("pda export: name a session id (or --otel --batch <run>)");
        quietOnClosedPipe();
        const session = withStore(g, (store) => store.getSession(id));
        const text = `${JSON.stringify(session, null, 2)}\n`;
        if (!opts.out) return void process.stdout.write(text);
        writeFileSync(opts.out, text);
        if (opts.json) {
          const written = { session_id: session.session_id, file: opts.out };
          return void process.stdout.write(`${JSON.stringify(written, null, 2)}\n`);
        }
        process.stderr.write(chalk.dim(`session ${session.session_id} written to ${opts.out}\n`));
      }),
    );
}
