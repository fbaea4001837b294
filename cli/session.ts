/**
 * `pda resume <id>` (continue a session waiting on a human) and `pda replay <id>` (re-run from the log).
 * Exit codes of resume: 0 answered; 1 did not reach its goal; 2 bad usage; 3 no model or server; 4 nobody
 * could be asked (no terminal, no --hil): the session stays paused.
 */
import chalk from "chalk";
import type { Command } from "commander";
import {
  loggedTree,
  replayMatches,
  summarize,
  TreeReplay,
  type SessionComparison,
  type StepDifference,
} from "../agent/index.js";
import { configDir, configFile, loadConfigFile, ProfilesFile } from "../config/index.js";
import { ConfigError, StoreError, newId, type AgentSession } from "../core/index.js";
import type { DisplayStatus } from "../memory/index.js";
import { runCommand } from "./context.js";
import { cancelOnSigint, printOutcome, traceTo, withSessionOptions } from "./run.js";
import { globalOptions, openRuntime, openStore, type GlobalOptions } from "./runtime.js";

export function registerSession(program: Command) {
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
      if (status === "awaiting_human" && !opts.hil && !(process.stdin.isTTY && process.stdout.isTTY)) {
        stillWaiting(waiting, !!opts.json);
        return EXIT_STILL_WAITING;
      }
      const rt = await openRuntime(opts);
      const sigint = cancelOnSigint(rt);
      const trace = traceTo(rt, !!opts.json, !!opts.verbose);
      try {
        // An interrupted session is claimed first, so two resumes cannot both continue it.
        if (status === "interrupted") rt.store.claimInterrupted(waiting.session_id);
        const logged = rt.store.getSession(waiting.session_id);
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
        const trace = traceTo(rt, !!opts.json, !!opts.verbose);
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
            printOutcome(replayed, false);
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

/** `pda resume`'s exit code when the session still waits on a human because nobody could be asked. */
export const EXIT_STILL_WAITING = 4;

function stillWaiting(s: AgentSession, json: boolean): void {
  const how =
    "no one can answer here (stdin/stdout is not a terminal): run pda resume in a terminal, or answer with " +
    "--hil scripted:FILE (answers in a YAML file) or --hil policy:<fail|skip|abort|deny|defer|defaults>";
  if (json) {
    const out = { session_id: s.session_id, status: s.status, question: s.pending_question, how };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  }
  process.stderr.write(
    `session ${s.session_id} still waits on a human and stays paused: ${s.pending_question ?? "(no question)"}\n${how}\n`,
  );
}

function differenceLines(differences: StepDifference[], indent: string): string[] {
  return differences.map((d) =>
    chalk.yellow(
      `${indent}step ${d.step} (${d.description}) differs: logged ${JSON.stringify(d.logged)}, replayed ${JSON.stringify(d.replayed)}`,
    ),
  );
}

/** One sub-agent session of a replayed team: matched or not, same report or not, and its steps that differ. */
function subAgentLines(c: SessionComparison): string[] {
  const id = (s: string | null) => (s ? s.slice(0, 8) : "—");
  const head = `sub-agent ${c.agent ?? "?"} ${chalk.dim(`logged ${id(c.logged_session_id)} → replayed ${id(c.replayed_session_id)}`)}`;
  if (!c.replayed_session_id) return [chalk.red(`${head}: the replay did not call it`)];
  if (!c.logged_session_id) return [chalk.red(`${head}: not in the log (the replay called it)`)];
  const verdict = replayMatches(c)
    ? chalk.green("same answer, same steps")
    : c.same_answer
      ? chalk.yellow("same answer")
      : chalk.red(`answer differs (${c.status.logged} → ${c.status.replayed})`);
  return [`${head}: ${verdict}`, ...differenceLines(c.differences, "    ")];
}

/**
 * The profile a logged session replays under: `--profile`, else the default, else the one profile that runs
 * the session's agent. It must run the agent the session was run by (or none, for a plain session).
 */
function replayProfile(opts: GlobalOptions, logged: AgentSession): string | undefined {
  const file = configFile(configDir(opts.config), "profiles.yaml");
  const { default: fallback, profiles } = loadConfigFile(file, ProfilesFile);
  const by = (agent: string | undefined) => (agent ? `agent "${agent}"` : "no agent team");
  const runs = (name: string) => profiles[name]?.agent === logged.agent;
  if (opts.profile) {
    if (profiles[opts.profile] && !runs(opts.profile)) {
      throw new ConfigError(
        `session ${logged.session_id} was run by ${by(logged.agent)}, but profile "${opts.profile}" runs ${by(profiles[opts.profile]!.agent)}; replay it under the profile it ran under`,
      );
    }
    return opts.profile;
  }
  if (runs(fallback)) return undefined;
  const candidates = Object.keys(profiles).filter(runs);
  if (logged.agent && candidates.length === 1) return candidates[0];
  throw new ConfigError(
    `session ${logged.session_id} was run by ${by(logged.agent)}; name the profile it ran under with --profile (profiles that run it: ${candidates.join(", ") || "none"})`,
  );
}
