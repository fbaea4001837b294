/**
 * Restart delays after consecutive failures: the first restart is immediate (a crash should cost one
 * call, not the next one too), then 0.5 s doubling up to 30 s, so a server that dies at start is not
 * respawned in a loop.
 */
export function restartDelayMs(consecutiveFailures: number, baseMs = 500, maxMs = 30_000): number {
  if (consecutiveFailures <= 1) return 0;
  return Math.min(maxMs, baseMs * 2 ** (consecutiveFailures - 2));
}
