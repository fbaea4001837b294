#!/usr/bin/env node
/** The `pda` command line: parses, registers only the command being run (cli/commands/). */
import { programFor } from "./cli/commands/index.js";
import { stdoutClosed } from "./cli/output.js";

// NO_COLOR (no-color.org): chalk reads only FORCE_COLOR, and command groups (with chalk) load after this line.
if (process.env.NO_COLOR) process.env.FORCE_COLOR = "0";

// `pda tools | head`: the reader went away; stop quietly instead of crashing on EPIPE. A session in flight is
// cancelled and ends with its own status first (cli/output.ts).
process.stdout.on("error", (e: NodeJS.ErrnoException) => {
  if (e.code !== "EPIPE") throw e;
  if (!stdoutClosed()) process.exit(0);
});

await (await programFor(process.argv.slice(2))).parseAsync(process.argv);
