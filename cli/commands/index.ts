/**
 * The command table and the program it assembles: every top-level command's name, help term and description,
 * and its own module (cli/commands/<name>.ts) that registers it. `pda --help` and `pda --version` are answered
 * from this table alone; a command's module, with the model clients, the MCP SDK and the sandbox it imports, is
 * loaded only when that command runs or its own help is asked for. cli/commands.test.ts checks the table
 * against what the modules register.
 */
import { Command } from "commander";
import { printJsonError } from "../json-error.js";

export type Register = (program: Command) => void;

export interface CommandEntry {
  name: string;
  /** The help term as `pda --help` lists it. */
  term: string;
  description: string;
  /** The command's own module (cli/commands/<name>.ts), loaded only when it runs or its help is asked for. */
  load: () => Promise<Register>;
}

const entry = (name: string, [term, description]: [string, string], load: CommandEntry["load"]) => ({
  name,
  term,
  description,
  // zod's settings first: they apply to the schemas the command's modules build as they load.
  load: async () => {
    await import("../../core/zod-config.js");
    return load();
  },
});

/* Each `import()` names its module literally so the bundler and tsc see every command. */
export const COMMANDS: CommandEntry[] = [
  entry(
    "run",
    ["run [options] [query]", "answer one query: perceive, plan, run tools, check, answer"],
    async () => (await import("./run.js")).register,
  ),
  entry(
    "chat",
    ["chat [options]", "interactive: one session per line typed (/help for commands)"],
    async () => (await import("./chat.js")).register,
  ),
  entry(
    "resume",
    [
      "resume [options] <id>",
      "continue a session that waits on a human: ask its question again and go on from the same step " +
        "(without a terminal, --hil says who answers; with neither the session stays paused, exit 4); " +
        "or a session whose process died (interrupted): go on from its last step",
    ],
    async () => (await import("./resume.js")).register,
  ),
  entry(
    "replay",
    [
      "replay [options] <id>",
      "re-run a logged session with its logged model outputs (no model needed) and the live tools; report " +
        "steps whose results differ (a team session: every sub-agent session too)",
    ],
    async () => (await import("./replay.js")).register,
  ),
  entry(
    "servers",
    [
      "servers [options]",
      "the configured MCP servers: running, cached (tools known, not started), failed or disabled, with tool " +
        "count, the MCP revision it speaks and last error (exit 3 if one failed); servers not cached yet are started",
    ],
    async () => (await import("./servers.js")).register,
  ),
  entry(
    "tools",
    ["tools [options]", "list the tools of the configured MCP servers"],
    async () => (await import("./tools.js")).register,
  ),
  entry(
    "call",
    [
      "call [options] <tool> [json]",
      "call one tool and print its result as JSON (exit 1 tool error, 2 bad usage, 3 server unreachable)",
    ],
    async () => (await import("./call.js")).register,
  ),
  entry(
    "resources",
    [
      "resources [options] [server]",
      "the MCP resources and resource templates of the configured servers; `read` prints one",
    ],
    async () => (await import("./resources.js")).register,
  ),
  entry(
    "prompts",
    ["prompts [options] [server]", "the MCP prompts of the configured servers; `get` prints one filled in"],
    async () => (await import("./prompts.js")).register,
  ),
  entry(
    "sessions",
    ["sessions [options]", "past sessions, newest first"],
    async () => (await import("./sessions.js")).register,
  ),
  entry(
    "show",
    [
      "show [options] <id>",
      "one session's timeline: perceptions, plan versions, steps with code and results, tools, humans",
    ],
    async () => (await import("./show.js")).register,
  ),
  entry(
    "export",
    [
      "export [options] [id]",
      "a session as JSON (the AgentSession schema), to a file or stdout; with --otel, as OpenTelemetry traces",
    ],
    async () => (await import("./export.js")).register,
  ),
  entry(
    "memory",
    ["memory", "what the agent remembers from past sessions"],
    async () => (await import("./memory.js")).register,
  ),
  entry(
    "batch",
    [
      "batch [options] <file>",
      "run every query of a CSV or JSONL file; write per-query and per-tool CSVs and a summary",
    ],
    async () => (await import("./batch.js")).register,
  ),
  entry(
    "worker",
    [
      "worker [options]",
      "take `pda batch --queue` jobs from Redis and run them, each as a session in this worker's store",
    ],
    async () => (await import("./worker.js")).register,
  ),
  entry(
    "report",
    [
      "report [options] <dir> [other]",
      "report on a batch output folder, or compare two (A = the first, B = the second)",
    ],
    async () => (await import("./report.js")).register,
  ),
  entry(
    "models",
    ["models [options]", "list the model providers, the default choice and why, and what each role uses"],
    async () => (await import("./models.js")).register,
  ),
  entry(
    "robot",
    ["robot", "the tabletop robot simulator: tasks, bench, render"],
    async () => (await import("./robot.js")).register,
  ),
  entry(
    "exec",
    [
      "exec [options] <file>",
      "run sandbox code against the configured MCP servers and print the result as JSON (exit 1 if it failed)",
    ],
    async () => (await import("./exec.js")).register,
  ),
  entry(
    "agents",
    ["agents", "agent teams: the agents of agents.yaml (list, the default) and tool statistics per agent"],
    async () => (await import("./agents.js")).register,
  ),
  entry(
    "ui",
    [
      "ui [options]",
      "a local web app over the session store: sessions (search, filters), one session's timeline, live " +
        "runs, batch runs; prints its address (Ctrl-C stops it)",
    ],
    async () => (await import("./ui.js")).register,
  ),
  entry(
    "auth",
    ["auth", "log in to remote MCP servers that ask for OAuth: login, logout, status"],
    async () => (await import("./auth.js")).register,
  ),
  entry(
    "config",
    [
      "config [options]",
      "where pda's config comes from: the folder and each file used, and the session store",
    ],
    async () => (await import("./config.js")).register,
  ),
  entry(
    "completion",
    ["completion <shell>", "print the shell completion script for bash, zsh, fish or powershell"],
    async () => (await import("./completion.js")).register,
  ),
];

/** Global options that take a value, so the word after them is not the command. */
const VALUE_OPTIONS = new Set(["--config", "--db"]);

/** The command word of argv (after node and the script); for `help <command>`, that command. */
export function commandName(argv: string[]): string | undefined {
  const words: string[] = [];
  for (let i = 0; i < argv.length && words.length < 2; i++) {
    const a = argv[i]!;
    if (VALUE_OPTIONS.has(a)) i++;
    else if (!a.startsWith("-")) words.push(a);
  }
  return words[0] === "help" ? words[1] : words[0];
}

export function commandEntry(name: string | undefined): CommandEntry | undefined {
  return name === undefined ? undefined : COMMANDS.find((c) => c.name === name);
}

/** The program with its global options and no commands. */
export function baseProgram(): Command {
  return (
    new Command()
      .name("pda")
      .description(
        "Perception–Decision–Action agents over MCP tools, with SQLite memory and a human in the loop",
      )
      .version("0.1.0")
      .option(
        "--config <dir|file>",
        "config folder or a file in it (env PDA_CONFIG; else the nearest .pda/, the user's config folder, the bundled config/: see pda config)",
      )
      .option("--db <path>", "SQLite session store (env PDA_DB; default: the user's data directory)")
      .option("--verbose", "more detail in traces and errors")
      .option(
        "--otel",
        "send OpenTelemetry traces and metrics over OTLP (set by the standard OTEL_* variables)",
      )
      .configureHelp({ showGlobalOptions: true })
      .showHelpAfterError()
      // Bad usage (unknown command or option, missing argument) exits 2, as DESIGN.md says; help and version 0.
      .exitOverride((err) => {
        if (err.exitCode === 0) process.exit(0);
        printJsonError("USAGE", err.message.replace(/^error: /, ""), 2);
        process.exit(2);
      })
  );
}

/**
 * Every command as a placeholder with its table term and description: enough for `pda --help`, `--version`
 * and "unknown command" suggestions. A placeholder never runs: a known command loads its own module instead.
 */
export function addPlaceholders(program: Command, except: string[] = []): Command {
  const terms = new Map<string, string>();
  for (const { name, term, description } of COMMANDS) {
    if (except.includes(name)) continue;
    program.command(name).description(description);
    terms.set(name, term);
  }
  const help = program.createHelp();
  return program.configureHelp({
    ...program.configureHelp(),
    subcommandTerm: (cmd) => terms.get(cmd.name()) ?? help.subcommandTerm(cmd),
  });
}

/** The program for argv: the named command registered, or the placeholders when no command is named. */
export async function programFor(argv: string[]): Promise<Command> {
  if (commandName(argv) === "complete") return completionProgram(argv);
  const program = baseProgram();
  const command = commandEntry(commandName(argv));
  if (command) (await command.load())(program);
  else addPlaceholders(program);
  return program;
}

/**
 * `pda complete -- <words>`, which a completion script runs on Tab: the program as far as the words name it
 * (the command they name with its options, else every command's placeholder) handed to @bomb.sh/tab, which
 * adds `complete` and prints the candidates.
 */
async function completionProgram(argv: string[]): Promise<Command> {
  const at = argv.indexOf("--");
  const words = at >= 0 ? argv.slice(at + 1) : [];
  const named = commandEntry(commandName(words));
  const program = baseProgram();
  if (named && named.name !== "completion") (await named.load())(program);
  else addPlaceholders(program, ["completion"]);
  const { default: tab } = await import("@bomb.sh/tab/commander");
  tab(program, { completionCommandName: "completion" });
  return program;
}
