/** `pda resume`: its options, help and action; what it shares with other commands is in ../session.ts. */
import chalk from "chalk";
import type { Command } from "commander";
import { ConfigError, type AgentSession } from "../../core/index.js";
import { findTerminal } from "../../hil/index.js";
import type { DisplayStatus } from "../../memory/index.js";
import { runCommand } from "../context.js";
import { cancelOnSigint, outputOf, printOutcome, traceTo, withSessionOptions } from "../run.js";
import { globalOptions, openRuntime, openStore } from "../runtime.js";
import { EXIT_STILL_WAITING, resumeProfile, stillWaiting } from "../session.js";

export function register(program: Command): void {
  withSessionOptions(
    program
      .command("resume")
      .description(
        "continue a session that waits on a human: ask its question again and go on from the same step " +
          "(without a terminal, --hil says who answers; with neither the session stays paused, exit 4); " +
          "or a session whose process died (interrupted): go on from its last step",
      )
      .argument("<id>", "session id (a unique prefix is enough)"),
  ).action(async (id: string, _o, cmd: Command) =>
    runCommand(async () => {
      const opts = globalOptions(cmd);
      const store = openStore(opts);
      let waiting: AgentSession;
      let status: DisplayStatus;
      try {
        waiting = store.getSession(id);
        status = store.displayStatus(waiting.session_id);
      } finally {
        store.close();
      }
      if (status !== "awaiting_human" && status !== "interrupted") {
        throw new ConfigError(
          `session ${waiting.session_id} is ${status}${status === "running" ? " (its process is alive)" : ""}; ` +
            `only a session awaiting a human, or interrupted (its process died), can be resumed`,
        );
      }
      // The default answerer without a terminal is policy:fail, which would end the paused session for good:
      // with nobody to ask, the session stays paused and the person is told how to answer.
      // A terminal is found as the terminal channel finds it: stdout in a file still has a person at the keys.
      if (status === "awaiting_human" && !opts.hil && findTerminal() === undefined) {
        stillWaiting(waiting, !!opts.json);
        return EXIT_STILL_WAITING;
      }
      const rt = await openRuntime({ ...opts, profile: resumeProfile(opts, waiting) });
      const sigint = cancelOnSigint(rt);
      const trace = traceTo(rt, outputOf(opts), !!opts.verbose);
      try {
        // An interrupted session is claimed first, so two resumes cannot both continue it.
        if (status === "interrupted") rt.store.claimInterrupted(waiting.session_id);
        const logged = rt.store.getSession(waiting.session_id);
        if (outputOf(opts) === "trace")
          process.stderr.write(chalk.dim(`resuming ${logged.session_id}: ${logged.original_query}\n`));
        const s = await rt
          .loop({ signal: sigint.signal, interrupts: sigint.interrupts, onEvent: trace.onEvent })
          .resume(logged);
        printOutcome(s, outputOf(opts));
        return s.status === "succeeded" ? 0 : 1;
      } finally {
        trace.dispose();
        sigint.dispose();
        await rt.close();
      }
    }),
  );
}
