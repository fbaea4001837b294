/**
 * Whether the process that owns a running session is still the one that started it. A session row names its
 * owner by pid, host and (on Linux) the process's start time: a pid alone can be reused by another process
 * after the owner is killed, and would keep a dead session "running" for good.
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";

function procStat(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name, which may itself hold spaces and parentheses: state is field 3.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null; // no /proc (macOS), or the process is gone
  }
}

/** When a process started (clock ticks since boot, from /proc/<pid>/stat field 22), or null where unknown. */
export function processStartTime(pid: number): string | null {
  return procStat(pid)?.[19] ?? null;
}

/** This process as a session owner. */
export function ownSelf(): { pid: number; host: string; started: string | null } {
  return { pid: process.pid, host: hostname(), started: processStartTime(process.pid) };
}

/** Whether a process exists (EPERM: it exists but belongs to someone else). A zombie counts as gone. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
  // Linux: a killed process stays signalable until its parent reaps it; its state letter says so.
  const state = procStat(pid)?.[0];
  return state === undefined || !/^[ZX]$/.test(state);
}

/** Why the owner of a session is gone, or null if it may still be running (or lives on another host). */
export function ownerGone(owner: {
  owner_pid: number | null;
  owner_host: string | null;
  owner_started: string | null;
}): string | null {
  const pid = owner.owner_pid;
  // A pid only means something on the host that wrote it; elsewhere we cannot tell.
  if (pid === null || owner.owner_host !== hostname()) return null;
  if (!processAlive(pid)) return `its process (pid ${pid}) ended without finishing the session`;
  const started = owner.owner_started === null ? null : processStartTime(pid);
  if (started !== null && started !== owner.owner_started) {
    return `its process (pid ${pid}) ended without finishing the session (the pid is now another process's)`;
  }
  return null;
}
