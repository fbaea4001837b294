/** `pda run`: its options, help and action; what it shares with other commands is in ../run.ts. */
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { ConfigError } from "../../core/index.js";
import { runCommand } from "../context.js";
import { globalOptions, openRuntime } from "../runtime.js";
import { cancelOnSigint, outputOf, printOutcome, runOne, withSessionOptions } from "../run.js";

export function register(program: Command): void {
  withSessionOptions(
    program
      .command("run")
      .description("answer one query: perceive, plan, run tools, check, answer")
      .argument(
        "[query]",
        "the request, in plain language; - (or nothing, with the query piped in) reads it from standard input",
      )
      .addHelpText(
        "after",
        `
Examples:
  pda run "What is 32 + 5 - 3 * 2"
  pda run "What is 32 + 5 - 3 * 2" --model scripted:config/demo/calculator.yaml   # no key needed
  pda run "Sum the first 10 Fibonacci numbers" --model gemini:gemini-2.5-flash --json
  pda run "Put the red block in the target" --profile robot-team --hil terminal
  echo "What is 2 + 2" | pda run - --quiet                                       # the answer alone

Exit codes: 0 answered; 1 the session did not reach its goal (see its status); 2 bad usage or config;
3 no model or server could be reached. Sessions are logged to --db; see them with pda sessions / pda show.`,
      ),
  ).action(async (given: string | undefined, _opts, cmd: Command) =>
    runCommand(async () => {
      const opts = globalOptions(cmd);
      const out = outputOf(opts);
      const query = readQuery(given);
      const rt = await openRuntime(opts);
      const sigint = cancelOnSigint(rt);
      try {
        // A local model file is fetched now: with none to be had, no session is started only to fail.
        await rt.router?.prepare();
        const s = await runOne(rt, query, out, !!opts.verbose, sigint);
        printOutcome(s, out);
        return s.status === "succeeded" ? 0 : 1;
      } finally {
        sigint.dispose();
        await rt.close();
      }
    }),
  );
}

/**
 * The query: the argument, or standard input for `-` or for no argument when something is piped in. Without
 * either (a terminal and no argument) it is a usage error rather than a wait on the keyboard.
 */
function readQuery(given: string | undefined): string {
  let query = given;
  if (given === "-" || (given === undefined && !process.stdin.isTTY)) {
    query = readFileSync(0, "utf8");
  } else if (given === undefined) {
    throw new ConfigError(
      'pda run: name a query, e.g. pda run "What is 2 + 2", or - to read it from standard input',
    );
  }
  if (!query!.trim()) {
    throw new ConfigError(
      `pda run: the query is empty${given === undefined || given === "-" ? " (standard input held none)" : ""}`,
    );
  }
  // A piped query ends with a newline that is no part of it; an argument is taken as given.
  return query === given ? query! : query!.trim();
}
