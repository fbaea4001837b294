/**
 * Run by the watchdog (watchdog.ts) once pda is gone: `node watchdog-kill.js pid:start ...`. Each server
 * still running with the same start time (not a reused pid) is ended with its descendants and, when it
 * leads one, its process group: SIGTERM, a wait, then SIGKILL.
 */
import { descendants, processGroup, signalAll, startTime } from "./proctree.js";

const WAIT_MS = 1500;

/** The pids to signal for one server (itself, its descendants, its group as -pgid), or [] when gone. */
function targets(entry: string): number[] {
  const [pidText, start] = entry.split(":");
  const pid = Number(pidText);
  if (!Number.isSafeInteger(pid) || pid <= 1 || startTime(pid) !== start) return [];
  const group = processGroup(pid) === pid ? [-pid] : [];
  return [...group, pid, ...descendants(pid)];
}

function alive(pids: number[]): boolean {
  return pids.some((pid) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  });
}

const entries = process.argv.slice(2);
const term = entries.flatMap(targets);
if (term.length) {
  signalAll(term, "SIGTERM");
  const deadline = Date.now() + WAIT_MS;
  while (alive(term) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  // Found again: what they started meanwhile is ended too.
  signalAll([...term, ...entries.flatMap(targets)], "SIGKILL");
}
