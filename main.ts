#!/usr/bin/env node
/** The `pda` command line: parses, wires the command groups in cli/, nothing else. */
import { Command } from "commander";
import { registerRun } from "./cli/run.js";
import { registerSession } from "./cli/session.js";
import { registerHub } from "./cli/hub.js";
import { registerMemory } from "./cli/memory.js";
import { registerBatch } from "./cli/batch.js";
import { registerReport } from "./cli/report.js";
import { registerModels } from "./cli/models.js";
import { registerRobot } from "./cli/robot.js";
import { registerExec } from "./cli/exec.js";

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
  .showHelpAfterError();

// Command groups register themselves here, one line each.
registerRun(program);
registerSession(program);
registerHub(program);
registerMemory(program);
registerBatch(program);
registerReport(program);
registerModels(program);
registerRobot(program);
registerExec(program);

await program.parseAsync(process.argv);
