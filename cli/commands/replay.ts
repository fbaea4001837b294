/** `pda replay`: its options, help and action; what it shares with other commands is in ../session.ts. */
import chalk from "chalk";
import type { Command } from "commander";
import { loggedTree, replayMatches, summarize, TreeReplay } from "../../agent/index.js";
import { ConfigError, StoreError, newId } from "../../core/index.js";
import { runCommand } from "../context.js";
import { printOutcome, traceTo } from "../run.js";
import { globalOptions, openRuntime, openStore } from "../runtime.js";
import { differenceLines, replayProfile, subAgentLines } from "../session.js";

export function register(program: Command): void {
  program
    .command("replay")
    .description(
      "re-run a logged session with its logged model outputs (no model needed) and the live tools; report steps whose results differ (a team session: every sub-agent session too)",
    )
    .argument("<id>", "session id (a unique prefix is enough)")
    .option(
      "--profile <name>",
      "the profile the session ran under (default: the default profile, or the one profile that runs the session's agent)",
    )
    .option(
      "--json",
      "print {logged, replayed, same_answer, differences, unconsumed_model_outputs, sub_agents} as JSON",
    )
    .option(
      "--session-id <uuid>",
      "the replayed session's id (default: a new one), so a caller such as pda ui can follow it as it runs",
    )
    .action(async (id: string, o: { sessionId?: string }, cmd: Command) =>
      runCommand(async () => {
        const opts = globalOptions(cmd);
        const store = openStore(opts);
        let logged;
        try {
          logged = loggedTree(store, id);
          if (o.sessionId !== undefined) freshSessionId(store, o.sessionId);
        } finally {
          store.close();
        }
        const root = logged.session;
        if (root.parent_session_id) {
          throw new ConfigError(
            `session ${root.session_id} is sub-agent ${root.agent ?? "?"}'s session, called by ${root.parent_session_id}; replay its caller's session, which replays it too`,
          );
        }
        const replay = new TreeReplay(logged, o.sessionId ?? newId());
        // Humans are not asked again: their logged answers are in the logged model outputs' context.
        const rt = await openRuntime(
          { ...opts, profile: replayProfile(opts, root), hil: "policy:fail" },
          { models: { perception: replay.root, decision: replay.root }, modelFor: replay.modelFor },
        );
        const trace = traceTo(rt, opts.json ? "json" : "trace", !!opts.verbose);
        try {
          const replayed = await rt
            .loop({ onEvent: trace.onEvent })
            .run(root.original_query, { sessionId: replay.rootId });
          const [main, ...subs] = replay.compare((sid) => rt.store.getSession(sid));
          if (opts.json) {
            const out = {
              logged: summarize(root),
              replayed: summarize(replayed),
              same_answer: main!.same_answer,
              differences: main!.differences,
              unconsumed_model_outputs: main!.unconsumed_model_outputs,
              sub_agents: subs,
            };
            process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
          } else {
            printOutcome(replayed, "trace");
            process.stdout.write(
              main!.same_answer
                ? chalk.green(`same final answer as ${root.session_id}\n`)
                : chalk.red(`final answer differs: logged ${JSON.stringify(root.state.final_answer)}\n`),
            );
            for (const line of differenceLines(main!.differences, "")) process.stdout.write(`${line}\n`);
            for (const c of subs) for (const line of subAgentLines(c)) process.stdout.write(`${line}\n`);
          }
          return [main!, ...subs].every(replayMatches) ? 0 : 1;
        } finally {
          trace.dispose();
          await rt.close();
        }
      }),
    );
}

/** --session-id must be a UUID no session in the store has (nor starts with). */
function freshSessionId(store: ReturnType<typeof openStore>, id: string): void {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) {
    throw new ConfigError(`--session-id must be a UUID, got "${id}"`);
  }
  let taken: string | undefined;
  try {
    taken = store.resolveId(id);
  } catch (e) {
    if (!(e instanceof StoreError && e.code === "STORE_NOT_FOUND")) throw e;
  }
  if (taken !== undefined) throw new ConfigError(`--session-id ${id}: the store has that session already`);
}
