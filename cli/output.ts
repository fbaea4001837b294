/**
 * When stdout's reader goes away (`pda run … | head`): further output is dropped, and a session in flight is
 * cancelled cleanly (it ends aborted, with its reason logged) instead of the process exiting under it.
 */
const listeners = new Set<() => void>();

/** Call `listener` when stdout is closed; returns the unsubscribe. */
export function onStdoutClosed(listener: () => void): () => void {
  listeners.add(listener);
  return () => void listeners.delete(listener);
}

/** stdout got EPIPE: drop what is still written, tell the listeners; false when nobody listens (exit now). */
export function stdoutClosed(): boolean {
  process.stdout.write = (() => true) as typeof process.stdout.write;
  for (const l of [...listeners]) l();
  return listeners.size > 0;
}
