/** `pda resume <id>` (continue a session waiting on a human) and `pda replay <id>` (re-run from the log). */
import chalk from "chalk";
import type { Command } from "commander";
import { diffSteps, replayModel, summarize } from "../agent/index.js";
import { ConfigError } from "../core/index.js";
import { runCommand } from "./context.js";
import { cancelOnSigint, printOutcome, traceTo, withSessionOptions } from "./run.js";
import { globalOptions, openRuntime, openStore } from "./runtime.js";

export function registerSession(program: Command) {
  withSessionOptions(
    program
      .command("resume")
      .description(
        "continue a session that waits on a human: ask its question again and go on from the same step",
      )
      .argument("<id>", "session id (a unique prefix is enough)"),
  ).action(async (id: string, _o, cmd: Command) =>
    runCommand(async () => {
      const opts = globalOptions(cmd);
      const rt = await openRuntime(opts);
      const sigint = cancelOnSigint(rt);
      const trace = traceTo(rt, !!opts.json, !!opts.verbose);
      try {
        const logged = rt.store.getSession(id);
        if (logged.status !== "awaiting_human") {
          throw new ConfigError(
            `session ${logged.session_id} is ${logged.status}; only a session awaiting a human can be resumed`,
          );
        }
        if (!opts.json)
          process.stdout.write(chalk.dim(`resuming ${logged.session_id}: ${logged.original_query}\n`));
        const s = await rt
          .loop({ signal: sigint.signal, interrupts: sigint.interrupts, onEvent: trace.onEvent })
          .resume(logged);
        printOutcome(s, !!opts.json);
        return s.status === "succeeded" ? 0 : 1;
      } finally {
        trace.dispose();
        sigint.dispose();
        await rt.close();
      }
    }),
  );

  program
    .command("replay")
    .description(
      "re-run a logged session with its logged model outputs (no model needed) and the live tools; report steps whose results differ",
    )
    .argument("<id>", "session id (a unique prefix is enough)")
    .option("--json", "print {session, differences} as JSON")
    .action(async (id: string, _o, cmd: Command) =>
      runCommand(async () => {
        const opts = globalOptions(cmd);
        const store = openStore(opts);
        let logged;
        let calls;
        try {
          logged = store.getSession(id);
          calls = store.llmCalls(logged.session_id);
        } finally {
          store.close();
        }
        const { model, transport } = replayModel(calls, logged.session_id);
        // Humans are not asked again: their logged answers are in the logged model outputs' context.
        const rt = await openRuntime(
          { ...opts, hil: "policy:fail" },
          { models: { perception: model, decision: model } },
        );
        const trace = traceTo(rt, !!opts.json, !!opts.verbose);
        try {
          const replayed = await rt.loop({ onEvent: trace.onEvent }).run(logged.original_query);
          const differences = diffSteps(logged, replayed);
          const sameAnswer = replayed.state.final_answer === logged.state.final_answer;
          const left = transport.unconsumed();
          if (opts.json) {
            process.stdout.write(
              `${JSON.stringify({ logged: summarize(logged), replayed: summarize(replayed), same_answer: sameAnswer, differences, unconsumed_model_outputs: left }, null, 2)}\n`,
            );
          } else {
            printOutcome(replayed, false);
            process.stdout.write(
              sameAnswer
                ? chalk.green(`same final answer as ${logged.session_id}\n`)
                : chalk.red(`final answer differs: logged ${JSON.stringify(logged.state.final_answer)}\n`),
            );
            for (const d of differences) {
              process.stdout.write(
                chalk.yellow(
                  `step ${d.step} (${d.description}) differs: logged ${JSON.stringify(d.logged)}, replayed ${JSON.stringify(d.replayed)}\n`,
                ),
              );
            }
          }
          return sameAnswer && differences.length === 0 ? 0 : 1;
        } finally {
          trace.dispose();
          await rt.close();
        }
      }),
    );
}
