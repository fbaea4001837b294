/** `pda chat`: its options, help and action; what it shares with other commands is in ../run.ts. */
import chalk from "chalk";
import type { Command } from "commander";
import { summaryLine } from "../../core/index.js";
import { runCommand } from "../context.js";
import { globalOptions, openRuntime } from "../runtime.js";
import { cancelOnSigint, chatLines, outputOf, printOutcome, runOne, withSessionOptions } from "../run.js";

export function register(program: Command): void {
  withSessionOptions(
    program.command("chat").description("interactive: one session per line typed (/help for commands)"),
  ).action(async (_opts, cmd: Command) =>
    runCommand(async () => {
      const opts = globalOptions(cmd);
      const rt = await openRuntime(opts);
      const tty = !!process.stdin.isTTY;
      const help =
        "type a request and press Enter; /help this text, /tools the tools, /exit (or Ctrl-D) to leave";
      if (tty) process.stderr.write(chalk.dim(`pda chat — ${help}\n`));
      let last = 0;
      try {
        await rt.router?.prepare();
        for await (const raw of chatLines(tty)) {
          const line = raw.trim();
          if (!line) continue;
          if (line === "/exit" || line === "/quit") break;
          if (line === "/help") {
            process.stdout.write(`${help}\n`);
            continue;
          }
          if (line === "/tools") {
            for (const t of rt.hub.tools()) {
              process.stdout.write(`  ${t.qualified} ${chalk.dim(summaryLine(t.description))}\n`);
            }
            continue;
          }
          // "/tolls" is a typo of a command, not a request to the model ("/tmp/x" is a path: it goes on).
          const command = /^\/(\w+)(\s|$)/.exec(line);
          if (command) {
            process.stderr.write(`unknown command /${command[1]}, try /help\n`);
            continue;
          }
          const sigint = cancelOnSigint(rt);
          try {
            const s = await runOne(rt, line, outputOf(opts), !!opts.verbose, sigint);
            printOutcome(s, outputOf(opts));
            last = s.status === "succeeded" ? 0 : 1;
          } finally {
            sigint.dispose();
          }
        }
      } finally {
        await rt.close();
      }
      return last;
    }),
  );
}
