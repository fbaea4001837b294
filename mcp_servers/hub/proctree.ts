/**
 * A child's descendants, found from /proc (Linux), so a server started through a wrapper (`sh -c`, `npx`)
 * can be ended with everything it started, also what a descendant moved into a process group of its own.
 * Servers also lead a process group (stdio.ts spawns them detached), which holds what left the tree.
 * Elsewhere than Linux the list is empty and only the direct child and its group are signalled.
 */
import { readFileSync, readdirSync } from "node:fs";

function parentMap(): Map<number, number[]> {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return children;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue; // exited while we looked
    }
    // Fields after the command name (which may hold spaces and parentheses): state, ppid, ...
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    const list = children.get(ppid) ?? [];
    list.push(Number(name));
    children.set(ppid, list);
  }
  return children;
}

/** Every descendant pid of `pid` (children, grandchildren, ...), at this moment. */
export function descendants(pid: number): number[] {
  if (process.platform !== "linux") return [];
  const children = parentMap();
  const out: number[] = [];
  const queue = [...(children.get(pid) ?? [])];
  while (queue.length) {
    const p = queue.shift()!;
    out.push(p);
    queue.push(...(children.get(p) ?? []));
  }
  return out;
}

/** Signal each pid; ones already gone are skipped. */
export function signalAll(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** Fields of /proc/pid/stat after the command name (state is [0], ppid [1], pgrp [2], starttime [19]). */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** When a process started (clock ticks since boot), which tells it from a later one given the same pid. */
export function startTime(pid: number): string | undefined {
  return statFields(pid)?.[19];
}

/** The process group of a process, or undefined when it is gone (or not on Linux). */
export function processGroup(pid: number): number | undefined {
  const pgrp = statFields(pid)?.[2];
  return pgrp === undefined ? undefined : Number(pgrp);
}
