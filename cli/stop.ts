/** How the long-running commands (`pda batch`, `pda worker`) stop: on a signal, gently once, at once twice. */
import chalk from "chalk";

export interface Stopping {
  /** Aborted with `reason` at the first Ctrl-C or SIGTERM. */
  signal: AbortSignal;
  dispose(): void;
}

/**
 * Ctrl-C or SIGTERM aborts `signal` (with `reason`) after saying `message` on stderr; a second one exits at
 * once with 130, for a person who will not wait for the gentle stop.
 */
export function stopOnSignals(message: string, reason: string): Stopping {
  const ac = new AbortController();
  const onSignal = () => {
    if (ac.signal.aborted) process.exit(130);
    process.stderr.write(chalk.yellow(`\n${message} (again to exit now)\n`));
    ac.abort(new Error(reason));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return {
    signal: ac.signal,
    dispose() {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    },
  };
}
