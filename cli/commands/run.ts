/** `pda run`: its options, help and action; what it shares with other commands is in ../run.ts. */
import type { Command } from "commander";
import { ConfigError } from "../../core/index.js";
import { runCommand } from "../context.js";
import { globalOptions, openRuntime } from "../runtime.js";
import { cancelOnSigint, printOutcome, runOne, withSessionOptions } from "../run.js";

export function register(program: Command): void {
  withSessionOptions(
    program
      .command("run")
      .description("answer one query: perceive, plan, run tools, check, answer")
      .argument("<query>", "the request, in plain language")
      .addHelpText(
        "after",
        `
Examples:
  pda run "What is 32 + 5 - 3 * 2"
  pda run "What is 32 + 5 - 3 * 2" --model scripted:config/demo/calculator.yaml   # no key needed
  pda run "Sum the first 10 Fibonacci numbers" --model gemini:gemini-2.5-flash --json
  pda run "Put the red block in the target" --profile robot-team --hil terminal

Exit codes: 0 answered; 1 the session did not reach its goal (see its status); 2 bad usage or config;
3 no model or server could be reached. Sessions are logged to --db; see them with pda sessions / pda show.`,
      ),
  ).action(async (query: string, _opts, cmd: Command) =>
    runCommand(async () => {
      const opts = globalOptions(cmd) as ReturnType<typeof globalOptions> & { json?: boolean };
      if (!query.trim()) throw new ConfigError("pda run: the query is empty");
      const rt = await openRuntime(opts);
      const sigint = cancelOnSigint(rt);
      try {
        // A local model file is fetched now: with none to be had, no session is started only to fail.
        await rt.router?.prepare();
        const s = await runOne(rt, query, !!opts.json, !!opts.verbose, sigint);
        printOutcome(s, !!opts.json);
        return s.status === "succeeded" ? 0 : 1;
      } finally {
        sigint.dispose();
        await rt.close();
      }
    }),
  );
}
