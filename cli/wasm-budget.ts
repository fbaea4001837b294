/**
 * The sandbox's QuickJS interpreter is a few huge WebAssembly functions, which V8 recompiles with TurboFan once
 * they have run a little: 0.2-0.5 s of CPU on background threads that a CLI run never earns back (a loop already
 * running stays in the baseline code, as WebAssembly has no on-stack replacement). With a budget ~500x the
 * default, a run's steps stay on the baseline code, and a long batch still tiers up after some steps (#16).
 */
import { setFlagsFromString } from "node:v8";

let set = false;

/**
 * Raise V8's WebAssembly tiering budget for this process (flags are process-wide, read when the sandbox's module
 * is compiled: call before the first step). A budget given on node's command line wins. Not at start-up:
 * node:v8 costs `pda --help` a tenth of its CPU.
 */
export function keepSandboxOnBaseline(): void {
  if (set || process.execArgv.some((a) => a.startsWith("--wasm-tiering-budget"))) return;
  set = true;
  setFlagsFromString("--wasm-tiering-budget=1000000000");
}
