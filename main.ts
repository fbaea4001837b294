#!/usr/bin/env node
/** The `pda` command line: parses, registers only the command being run (cli/commands/). */
import { setFlagsFromString } from "node:v8";
import { programFor } from "./cli/commands/index.js";
import { stdoutClosed } from "./cli/output.js";

// The sandbox's QuickJS interpreter is a few huge WebAssembly functions, which V8 recompiles with TurboFan once
// they have run a little: 0.2-0.5 s of CPU on background threads that a CLI run never earns back (a loop already
// running stays in the baseline code, as WebAssembly has no on-stack replacement). With a budget ~500x the
// default, a run's steps stay on the baseline code, and a long batch still tiers up after some steps (#16).
// Process-wide, so set before the first module is compiled; a budget given on node's command line wins.
if (!process.execArgv.some((a) => a.startsWith("--wasm-tiering-budget"))) {
  setFlagsFromString("--wasm-tiering-budget=1000000000");
}

// NO_COLOR (no-color.org): chalk reads only FORCE_COLOR, and command groups (with chalk) load after this line.
if (process.env.NO_COLOR) process.env.FORCE_COLOR = "0";

// `pda tools | head`: the reader went away; stop quietly instead of crashing on EPIPE. A session in flight is
// cancelled and ends with its own status first (cli/output.ts).
process.stdout.on("error", (e: NodeJS.ErrnoException) => {
  if (e.code !== "EPIPE") throw e;
  if (!stdoutClosed()) process.exit(0);
});

await (await programFor(process.argv.slice(2))).parseAsync(process.argv);
