/**
 * The command table: every top-level command's name, help term and description, and the group (cli/<group>.ts)
 * that registers it. `pda --help` and `pda --version` are answered from this table alone; a command's group,
 * with the model clients, the MCP SDK and the sandbox it imports, is loaded only when that command runs or its
 * own help is asked for. tests/commands.test.ts checks the table against what the groups register.
 */
import { Command } from "commander";

type Register = (program: Command) => void;

export interface CommandGroup {
  load: () => Promise<Register>;
  /** name → [help term as `pda --help` lists it, description]. */
  commands: Record<string, [term: string, description: string]>;
}

export const GROUPS: CommandGroup[] = [
  {
    load: async () => (await import("./run.js")).registerRun,
    commands: {
      run: ["run [options] <query>", "answer one query: perceive, plan, run tools, check, answer"],
      chat: ["chat [options]", "interactive: one session per line typed (/help for commands)"],
    },
  },
  {
    load: async () => (await import("./session.js")).registerSession,
    commands: {
      resume: [
        "resume [options] <id>",
        "continue a session that waits on a human: ask its question again and go on from the same step " +
          "(without a terminal, --hil says who answers; with neither the session stays paused, exit 4); " +
          "or a session whose process died (interrupted): go on from its last step",
      ],
      replay: [
        "replay [options] <id>",
        "re-run a logged session with its logged model outputs (no model needed) and the live tools; report " +
          "steps whose results differ (a team session: every sub-agent session too)",
      ],
    },
  },
  {
    load: async () => (await import("./hub.js")).registerHub,
    commands: {
      servers: [
        "servers [options]",
        "the configured MCP servers: running, cached (tools known, not started), failed or disabled, with tool " +
          "count and last error (exit 3 if one failed); servers not cached yet are started",
      ],
      tools: ["tools [options]", "list the tools of the configured MCP servers"],
      call: [
        "call [options] <tool> [json]",
        "call one tool and print its result as JSON (exit 1 tool error, 2 bad usage, 3 server unreachable)",
      ],
    },
  },
  {
    load: async () => (await import("./content.js")).registerContent,
    commands: {
      resources: [
        "resources [options] [server]",
        "the MCP resources and resource templates of the configured servers; `read` prints one",
      ],
      prompts: [
        "prompts [options] [server]",
        "the MCP prompts of the configured servers; `get` prints one filled in",
      ],
    },
  },
  {
    load: async () => (await import("./memory.js")).registerMemory,
    commands: {
      sessions: ["sessions [options]", "past sessions, newest first"],
      show: [
        "show [options] <id>",
        "one session's timeline: perceptions, plan versions, steps with code and results, tools, humans",
      ],
      export: [
        "export [options] [id]",
        "a session as JSON (the AgentSession schema), to a file or stdout; with --otel, as OpenTelemetry traces",
      ],
      memory: ["memory", "what the agent remembers from past sessions"],
    },
  },
  {
    load: async () => (await import("./batch.js")).registerBatch,
    commands: {
      batch: [
        "batch [options] <file>",
        "run every query of a CSV or JSONL file; write per-query and per-tool CSVs and a summary",
      ],
    },
  },
  {
    load: async () => (await import("./worker.js")).registerWorker,
    commands: {
      worker: [
        "worker [options]",
        "take `pda batch --queue` jobs from Redis and run them, each as a session in this worker's store",
      ],
    },
  },
  {
    load: async () => (await import("./report.js")).registerReport,
    commands: {
      report: [
        "report [options] <dir> [other]",
        "report on a batch output folder, or compare two (A = the first, B = the second)",
      ],
    },
  },
  {
    load: async () => (await import("./models.js")).registerModels,
    commands: {
      models: [
        "models [options]",
        "list the model providers, the default choice and why, and what each role uses",
      ],
    },
  },
  {
    load: async () => (await import("./robot.js")).registerRobot,
    commands: { robot: ["robot", "the tabletop robot simulator: tasks, bench, render"] },
  },
  {
    load: async () => (await import("./exec.js")).registerExec,
    commands: {
      exec: [
        "exec [options] <file>",
        "run sandbox code against the configured MCP servers and print the result as JSON (exit 1 if it failed)",
      ],
    },
  },
  {
    load: async () => (await import("./agents.js")).registerAgents,
    commands: {
      agents: [
        "agents",
        "agent teams: the agents of agents.yaml (list, the default) and tool statistics per agent",
      ],
    },
  },
  {
    load: async () => (await import("./ui.js")).registerUi,
    commands: {
      ui: [
        "ui [options]",
        "a local web app over the session store: sessions (search, filters), one session's timeline, live " +
          "runs, batch runs; prints its address (Ctrl-C stops it)",
      ],
    },
  },
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

export function groupOf(name: string | undefined): CommandGroup | undefined {
  return name === undefined ? undefined : GROUPS.find((g) => Object.hasOwn(g.commands, name));
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
        "config folder or a file in it (env PDA_CONFIG; default: the bundled config/)",
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
      .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2))
  );
}

/**
 * Every command as a placeholder with its table term and description: enough for `pda --help`, `--version`
 * and "unknown command" suggestions. A placeholder never runs: a known command loads its group instead.
 */
export function addPlaceholders(program: Command): Command {
  const terms = new Map<string, string>();
  for (const g of GROUPS) {
    for (const [name, [term, description]] of Object.entries(g.commands)) {
      program.command(name).description(description);
      terms.set(name, term);
    }
  }
  const help = program.createHelp();
  return program.configureHelp({
    ...program.configureHelp(),
    subcommandTerm: (cmd) => terms.get(cmd.name()) ?? help.subcommandTerm(cmd),
  });
}

/** The program for argv: the named command's group registered, or the placeholders when no command is named. */
export async function programFor(argv: string[]): Promise<Command> {
  const program = baseProgram();
  const group = groupOf(commandName(argv));
  if (group) (await group.load())(program);
  else addPlaceholders(program);
  return program;
}
