#!/usr/bin/env node
/** The `pda` command line: parses, wires the command groups in cli/, nothing else. */
import { Command } from "commander";
import { stdoutClosed } from "./cli/output.js";

// NO_COLOR (no-color.org): chalk reads only FORCE_COLOR, and command groups (with chalk) load after this line.
if (process.env.NO_COLOR) process.env.FORCE_COLOR = "0";

type Register = (program: Command) => void;

/**
 * Command groups, each in cli/<group>.ts. Only the group of the command being run is loaded (model clients, the
 * MCP SDK and the sandbox take a second to import); help and unknown commands load them all.
 */
const GROUPS: Array<{ commands: string[]; load: () => Promise<Register> }> = [
  { commands: ["run", "chat"], load: async () => (await import("./cli/run.js")).registerRun },
  { commands: ["resume", "replay"], load: async () => (await import("./cli/session.js")).registerSession },
  { commands: ["servers", "tools", "call"], load: async () => (await import("./cli/hub.js")).registerHub },
  {
    commands: ["sessions", "show", "export", "memory"],
    load: async () => (await import("./cli/memory.js")).registerMemory,
  },
  { commands: ["batch"], load: async () => (await import("./cli/batch.js")).registerBatch },
  { commands: ["report"], load: async () => (await import("./cli/report.js")).registerReport },
  { commands: ["models"], load: async () => (await import("./cli/models.js")).registerModels },
  { commands: ["robot"], load: async () => (await import("./cli/robot.js")).registerRobot },
  { commands: ["exec"], load: async () => (await import("./cli/exec.js")).registerExec },
  { commands: ["agents"], load: async () => (await import("./cli/agents.js")).registerAgents },
];

/** Global options that take a value, so the word after them is not the command. */
const VALUE_OPTIONS = new Set(["--config", "--db"]);

function commandName(argv: string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (VALUE_OPTIONS.has(a)) i++;
    else if (!a.startsWith("-")) return a;
  }
  return undefined;
}

// `pda tools | head`: the reader went away; stop quietly instead of crashing on EPIPE. A session in flight is
// cancelled and ends with its own status first (cli/output.ts).
process.stdout.on("error", (e: NodeJS.ErrnoException) => {
  if (e.code !== "EPIPE") throw e;
  if (!stdoutClosed()) process.exit(0);
});

const program = new Command()
  .name("pda")
  .description("Perception–Decision–Action agents over MCP tools, with SQLite memory and a human in the loop")
  .version("0.1.0")
  .option(
    "--config <dir|file>",
    "config folder or a file in it (env PDA_CONFIG; default: the bundled config/)",
  )
  .option("--db <path>", "SQLite session store (env PDA_DB; default: the user's data directory)")
  .option("--verbose", "more detail in traces and errors")
  .configureHelp({ showGlobalOptions: true })
  .showHelpAfterError()
  // Bad usage (unknown command or option, missing argument) exits 2, as DESIGN.md says; help and version 0.
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2));

const name = commandName(process.argv.slice(2));
const group = GROUPS.find((g) => name !== undefined && g.commands.includes(name));
for (const g of group ? [group] : GROUPS) (await g.load())(program);

await program.parseAsync(process.argv);
