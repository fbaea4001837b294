/**
 * What `pda resume <id>` (continue a session waiting on a human) and `pda replay <id>` (re-run from the log)
 * print beside the outcome, and the profile a replay runs under.
 * Exit codes of resume: 0 answered; 1 did not reach its goal; 2 bad usage; 3 no model or server; 4 nobody
 * could be asked (no terminal, no --hil): the session stays paused.
 */
import chalk from "chalk";
import { replayMatches, type SessionComparison, type StepDifference } from "../agent/index.js";
import { configDir, configFile, loadConfigFile, ProfilesFile } from "../config/index.js";
import { ConfigError, type AgentSession } from "../core/index.js";
import type { GlobalOptions } from "./runtime.js";

/** `pda resume`'s exit code when the session still waits on a human because nobody could be asked. */
export const EXIT_STILL_WAITING = 4;

export function stillWaiting(s: AgentSession, json: boolean): void {
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

export function differenceLines(differences: StepDifference[], indent: string): string[] {
  return differences.map((d) =>
    chalk.yellow(
      `${indent}step ${d.step} (${d.description}) differs: logged ${JSON.stringify(d.logged)}, replayed ${JSON.stringify(d.replayed)}`,
    ),
  );
}

/** One sub-agent session of a replayed team: matched or not, same report or not, and its steps that differ. */
export function subAgentLines(c: SessionComparison): string[] {
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
 * The profile a session resumes under: `--profile` (checked as a replay checks it), else the one it ran under
 * when it names one still in profiles.yaml, else as a replay picks it. A team's session resumed without its
 * team would find no `agents` for the step it runs again.
 */
export function resumeProfile(opts: GlobalOptions, logged: AgentSession): string | undefined {
  if (!opts.profile && logged.profile) {
    const file = configFile(configDir(opts.config), "profiles.yaml");
    if (loadConfigFile(file, ProfilesFile).profiles[logged.profile]) return logged.profile;
  }
  return replayProfile(opts, logged);
}

/**
 * The profile a logged session replays under: `--profile`, else the default, else the one profile that runs
 * the session's agent. It must run the agent the session was run by (or none, for a plain session).
 */
export function replayProfile(opts: GlobalOptions, logged: AgentSession): string | undefined {
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
