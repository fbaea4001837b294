/** The human channel's one interface, and the `--hil` spec that picks an implementation. */
import { ConfigError, systemClock, type Clock } from "../core/index.js";
import { HumanCancelled } from "./errors.js";
import { PolicyChannel, PolicyName, POLICY_NAMES } from "./policy.js";
import { checkAnswer, type AnswerOf, type Question } from "./questions.js";
import { ScriptedChannel } from "./scripted.js";
import { TerminalChannel, type TerminalOptions } from "./terminal.js";
import { findTerminal } from "./tty.js";
import type { AskOptions, HumanChannel } from "./human-channel.js";

export interface ChannelOptions {
  /**
   * Whether a person can type at stdin and stdout. Absent: found with findTerminal(), which also asks at the
   * controlling terminal when only some of stdin, stdout and stderr are redirected.
   */
  isTTY?: boolean;
  terminal?: TerminalOptions;
  clock?: Clock;
}

/** The channel used when `--hil` is not given and nobody is at a terminal: never a blocked read. */
export const NO_TTY_DEFAULT = "policy:fail";

/**
 * `--hil terminal | scripted:FILE | policy:NAME`. Without a spec: `terminal` when a person is at a terminal,
 * else `policy:fail`. A bad spec, a missing file or `terminal` without a terminal is a ConfigError (exit 2).
 */
export function createChannel(spec: string | undefined, opts: ChannelOptions): HumanChannel {
  const where = opts.isTTY === undefined ? findTerminal() : opts.isTTY ? "stdio" : undefined;
  const s = spec?.trim() || (where ? "terminal" : NO_TTY_DEFAULT);
  const [kind, ...rest] = s.split(":");
  const arg = rest.join(":");
  switch (kind) {
    case "terminal":
      if (arg) throw new ConfigError(`--hil ${s}: "terminal" takes no argument`);
      if (!where) {
        throw new ConfigError(
          `--hil terminal needs a terminal, but stdin/stdout is not a TTY and no other terminal was found; ` +
            `use --hil policy:<${POLICY_NAMES.join("|")}> or --hil scripted:<file>`,
        );
      }
      return new TerminalChannel({
        terminal: where,
        ...opts.terminal,
        clock: opts.terminal?.clock ?? opts.clock,
      });
    case "scripted":
      if (!arg) throw new ConfigError(`--hil scripted: needs a file, e.g. --hil scripted:answers.yaml`);
      return ScriptedChannel.fromFile(arg, { clock: opts.clock });
    case "ui":
      // The answer a person gave in `pda ui`, which wrote it as a scripted-answers file; logged as "ui".
      if (!arg) throw new ConfigError(`--hil ui: needs a file of answers`);
      return ScriptedChannel.fromFile(arg, { clock: opts.clock, answeredBy: "ui" });
    case "policy": {
      const name = PolicyName.safeParse(arg);
      if (!name.success) {
        throw new ConfigError(`--hil ${s}: unknown policy "${arg}" (known: ${POLICY_NAMES.join(", ")})`);
      }
      return new PolicyChannel(name.data, opts.clock);
    }
    default:
      throw new ConfigError(
        `--hil ${s}: expected terminal, scripted:<file> or policy:<${POLICY_NAMES.join("|")}>`,
      );
  }
}

/**
 * ask(), with a cancelled prompt (Ctrl-C, the signal) turned into the answer that pauses the session: a
 * StopAnswer `defer` (an elicitation gets `cancel`, as it cannot outlive its tool call). Other errors pass.
 */
export async function askOrDefer<Q extends Question>(
  channel: HumanChannel,
  q: Q,
  opts?: AskOptions & { clock?: Clock },
): Promise<AnswerOf<Q["kind"]>> {
  try {
    return await channel.ask(q, opts);
  } catch (e) {
    if (!(e instanceof HumanCancelled)) throw e;
    const by = { answered_by: channel.name, at: (opts?.clock ?? systemClock).iso(), note: e.message };
    return checkAnswer(
      q,
      q.kind === "elicitation"
        ? { kind: "elicitation", action: "cancel", ...by }
        : { kind: "stop", question_kind: q.kind, outcome: "defer", reason: e.message, ...by },
    );
  }
}
