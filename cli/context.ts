/** How a command reports a failure: its message on stderr and its exit code. */
import chalk from "chalk";
import { isPdaError, errorMessage } from "../core/index.js";

/** Run a command body; a PdaError becomes its message and exit code, anything else exit 1 with the stack. */
export async function runCommand(body: () => Promise<number | void>): Promise<void> {
  try {
    const code = await body();
    process.exitCode = code ?? 0;
  } catch (e) {
    if (isPdaError(e)) {
      process.stderr.write(`${chalk.red("error")} ${e.message}\n`);
      process.exitCode = e.exitCode;
    } else {
      process.stderr.write(`${chalk.red("error")} ${errorMessage(e)}\n${(e as Error)?.stack ?? ""}\n`);
      process.exitCode = 1;
    }
  }
}
