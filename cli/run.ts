/**
 * Sessions run at the terminal, shared by `pda run`, `chat`, `resume` and `replay` (cli/commands/): the session
 * options, the live trace, the outcome, Ctrl-C, and the lines `pda chat` reads.
 */
import { createInterface } from "node:readline/promises";
import chalk from "chalk";
import type { Command } from "commander";
import { summarize, type InterruptSource, type LoopEvent } from "../agent/index.js";
import { ConfigError, type AgentSession } from "../core/index.js";
import { withSubagentsLine } from "./agent-tree.js";
import { onStdoutClosed } from "./output.js";
import type { Runtime } from "./runtime.js";
import { Spinner } from "./spinner.js";
import { activity, downLines, hubLine, traceLine } from "./trace.js";

const MODEL_HELP =
  "model as provider[:model]: gemini[:name] (needs GEMINI_API_KEY), openai:<model> (OPENAI_BASE_URL), anthropic[:model] (ANTHROPIC_API_KEY), " +
  "llama:<file.gguf>, scripted:<file.yaml>";

const HIL_HELP =
  "who answers the agent's questions: terminal, scripted:<file.yaml>, or policy:<fail|skip|abort|deny|defer|defaults> " +
  "(default: terminal on a TTY, else policy:fail)";

export function withSessionOptions(cmd: Command): Command {
  return cmd
    .option("--model <spec>", MODEL_HELP)
    .option("--profile <name>", "budgets and limits from config/profiles.yaml")
    .option("--hil <channel>", HIL_HELP)
    .option("--json", "print the session summary as JSON on stdout instead of the trace")
    .option("--quiet", "no trace and no figures: only the answer on stdout (a failure's reason on stderr)");
}

/**
 * What a session command prints. Always the answer alone on stdout (or the summary as JSON), so
 * `pda run … > answer.txt` and `| jq` get only that; the live trace, the figures and a failure's reason on
 * stderr ("trace"), or nothing there but a failure's reason ("quiet").
 */
export type Output = "trace" | "json" | "quiet";

export function outputOf(opts: { json?: boolean; quiet?: boolean }): Output {
  if (opts.json && opts.quiet) throw new ConfigError("--json and --quiet: choose one");
  return opts.json ? "json" : opts.quiet ? "quiet" : "trace";
}

/**
 * The live trace on stderr (nothing with --json or --quiet), hub events included, and a spinner on a
 * terminal's stderr while a model call or a step's code runs (not with --quiet).
 */
export function traceTo(rt: Runtime, out: Output, verbose: boolean) {
  const spinner = new Spinner(process.stderr, out !== "quiet" && !!process.stderr.isTTY);
  const print = (line: string | null) => {
    if (line && out === "trace") spinner.around(() => process.stderr.write(`${line}\n`));
  };
  // Servers already down when the session starts failed before anyone listened.
  for (const line of downLines(rt.hub.availability().down)) print(line);
  const off = rt.hub.onEvent((e) => print(hubLine(e)));
  return {
    onEvent: (e: LoopEvent) => {
      print(traceLine(e, verbose));
      const label = activity(e);
      if (label === null) spinner.stop();
      else if (label) spinner.start(label);
    },
    dispose: () => {
      off();
      spinner.stop();
    },
  };
}

/** Run one query, printing the live trace (or nothing, with --json or --quiet). */
export async function runOne(
  rt: Runtime,
  query: string,
  out: Output,
  verbose: boolean,
  sigint?: ReturnType<typeof cancelOnSigint>,
): Promise<AgentSession> {
  const trace = traceTo(rt, out, verbose);
  try {
    return await rt
      .loop({ signal: sigint?.signal, interrupts: sigint?.interrupts, onEvent: trace.onEvent })
      .run(query);
  } finally {
    trace.dispose();
  }
}

export function printOutcome(s: AgentSession, out: Output) {
  if (out === "json") {
    process.stdout.write(`${JSON.stringify(summarize(s), null, 2)}\n`);
    return;
  }
  const say = (text: string) => out === "trace" && process.stderr.write(text);
  if (s.status === "succeeded") {
    // The label on stderr and the answer on stdout: "answer 31" at a terminal, the answer alone in a file.
    const oneTerminal = process.stdout.isTTY && process.stderr.isTTY;
    say(`\n${chalk.green.bold("answer")}${oneTerminal ? " " : "\n"}`);
    process.stdout.write(`${s.state.final_answer}\n`);
  } else if (s.status === "awaiting_human") {
    if (out === "quiet")
      process.stderr.write(`session ${s.session_id} is waiting for an answer: ${s.pending_question}\n`);
    say(
      `\n${chalk.yellow.bold("question")} ${s.pending_question}\n${chalk.dim(`session ${s.session_id} is waiting for an answer`)}\n`,
    );
  } else {
    if (out === "quiet") process.stderr.write(`${s.status} ${s.status_reason ?? ""}\n`);
    const partial = s.state.final_answer ? `\n${chalk.yellow("partial answer")} ${s.state.final_answer}` : "";
    say(`\n${chalk.red.bold(s.status)} ${s.status_reason ?? ""}${partial}\n`);
  }
  const u = s.usage;
  const cost = u.cost_usd > 0 ? ` · $${u.cost_usd.toFixed(4)}` : "";
  const team = withSubagentsLine(s);
  say(
    chalk.dim(
      `${s.steps.length} steps · ${s.plan_versions.length} plan versions · ${u.llm_calls} model calls · ` +
        `${u.tool_calls} tool calls · ${u.tokens} tokens${cost} · ${(u.ms / 1000).toFixed(1)} s` +
        (team && `\n${team}`),
    ) + "\n",
  );
}

/**
 * Ctrl-C while a session runs. With a person at the terminal (`rt.human` is the terminal channel), it
 * interrupts the model call or code in flight and the loop asks: go on, pause or abort. Otherwise it cancels
 * the session (it ends aborted and is logged). A second Ctrl-C within a second, or one while cancelling,
 * exits at once.
 */
export function cancelOnSigint(rt?: Runtime): {
  signal: AbortSignal;
  interrupts?: InterruptSource;
  dispose(): void;
} {
  const ac = new AbortController();
  const listeners = new Set<() => void>();
  const interruptible = rt?.human.name === "terminal";
  let last = 0;
  const onSigint = () => {
    const now = Date.now();
    if (ac.signal.aborted || now - last < 1000) process.exit(130);
    last = now;
    if (interruptible && listeners.size > 0) {
      process.stderr.write(chalk.yellow("\ninterrupted (Ctrl-C again at once to exit)\n"));
      for (const l of [...listeners]) l();
      return;
    }
    process.stderr.write(chalk.yellow("\ncancelling… (Ctrl-C again to exit now)\n"));
    ac.abort(new Error("cancelled by Ctrl-C"));
  };
  process.on("SIGINT", onSigint);
  const offStdout = onStdoutClosed(() => ac.abort(new Error("stdout was closed (its reader went away)")));
  const interrupts: InterruptSource | undefined = interruptible
    ? { subscribe: (l) => (listeners.add(l), () => void listeners.delete(l)) }
    : undefined;
  return {
    signal: ac.signal,
    interrupts,
    dispose: () => {
      process.off("SIGINT", onSigint);
      offStdout();
    },
  };
}

/**
 * The lines `pda chat` reads. Piped input: one reader, so no line is lost while a session runs. A terminal: a
 * fresh prompt per line (with history), closed while the session runs, so a question from the agent (hil/)
 * owns the keyboard alone. Ends at end of input, Ctrl-D, or Ctrl-C at the prompt.
 */
export async function* chatLines(tty: boolean): AsyncGenerator<string> {
  if (!tty) {
    yield* createInterface({ input: process.stdin, terminal: false });
    return;
  }
  const history: string[] = [];
  for (;;) {
    const rl = createInterface({
      input: process.stdin,
      // The prompt is no part of the output: stdout may be a file while a person types.
      output: process.stderr,
      terminal: true,
      history: [...history],
    });
    const closed = new Promise<null>((resolve) => rl.once("close", () => resolve(null)));
    rl.once("SIGINT", () => rl.close());
    const line = await Promise.race([rl.question(chalk.bold("› ")), closed]);
    rl.close();
    if (line === null) return;
    if (line.trim()) history.unshift(line);
    yield line;
  }
}
