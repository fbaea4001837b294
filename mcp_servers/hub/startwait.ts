/**
 * How long a stdio server may take to start, measured in what it does rather than only in wall time. On a
 * busy machine (many `pda run` at once on two cores) a server's start-up CPU is spread over a long wall time:
 * a fixed 20 s wait took such a server for dead. So the wait ends at the connect timeout only if the process
 * (with what it started) is idle then; while it runs or waits for a CPU it gets more time, until it has used
 * as much CPU as the timeout (then it is spinning, not starting) or a far longer wall-time cap.
 * Linux reads /proc/<pid>/stat; elsewhere the plain wall-time timeout applies.
 */
import { readFileSync } from "node:fs";
import { descendants } from "./proctree.js";

/** USER_HZ: the unit of /proc/<pid>/stat times, 100 on every Linux build in practice. */
const TICKS_PER_SECOND = 100;

/** How the process tree is doing now: CPU time used (clock ticks) and whether any of it is runnable. */
export interface CpuSample {
  ticks: number;
  runnable: boolean;
}

/** The CPU ticks and run state of `pid` and its descendants; undefined when /proc cannot tell. */
export function sampleTree(pid: number): CpuSample | undefined {
  if (process.platform !== "linux") return undefined;
  let ticks = 0;
  let runnable = false;
  let seen = false;
  for (const p of [pid, ...descendants(pid)]) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${p}/stat`, "utf8");
    } catch {
      continue; // exited meanwhile
    }
    // After "pid (comm) ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const state = fields[0];
    ticks += Number(fields[11]) + Number(fields[12]);
    // R: running or waiting for a CPU; D: waiting on the disk. Both are progress the machine holds back.
    if (state === "R" || state === "D") runnable = true;
    seen = true;
  }
  return seen ? { ticks, runnable } : undefined;
}

export interface StartWaitOptions {
  /** The process to watch (undefined until spawned, or for HTTP servers). */
  pid: () => number | undefined;
  /** The configured connect timeout: an idle process is given up on after this. */
  timeoutMs: number;
  /** A process that used this much CPU (ms) without answering is not starting: it is stuck in a loop. */
  maxCpuMs?: number;
  /** However busy the process, the wait never exceeds this wall time. */
  maxMs: number;
  /** How often the process is sampled. */
  intervalMs?: number;
  /** Injected for tests; default sampleTree. */
  sample?: (pid: number) => CpuSample | undefined;
}

/** Why the wait gave up (the message of the abort reason). */
export class StartTimeout extends Error {
  constructor(
    message: string,
    readonly busy: boolean,
  ) {
    super(message);
  }
}

/**
 * A signal that aborts (with a StartTimeout) once the start has taken `timeoutMs` and the process has been
 * idle since the last sample, or once it has taken `maxMs`. Call dispose() when the start ended.
 */
export function startWait(options: StartWaitOptions): {
  signal: AbortSignal;
  /** The server answered initialize: from now on it may sit idle waiting for us; only the caps apply. */
  answered(): void;
  dispose(): void;
} {
  const ac = new AbortController();
  const sample = options.sample ?? sampleTree;
  const interval = options.intervalMs ?? 500;
  const started = Date.now();
  let last: CpuSample | undefined;
  let answered = false;
  const check = () => {
    const elapsed = Date.now() - started;
    const pid = options.pid();
    const now = pid === undefined ? undefined : sample(pid);
    // Busy: it is running or waiting for a CPU, or it used a tenth of a CPU since the last look (a process
    // that only wakes now and then, e.g. to print a line, is not starting up).
    const used = now && last ? ((now.ticks - last.ticks) * 1000) / TICKS_PER_SECOND : 0;
    const busy = !!now && (now.runnable || used >= period / 10);
    if (now) last = now;
    const cpuMs = now ? (now.ticks * 1000) / TICKS_PER_SECOND : 0;
    if (options.maxCpuMs !== undefined && cpuMs >= options.maxCpuMs) {
      stop();
      ac.abort(
        new StartTimeout(
          `no answer to initialize after ${Math.round(cpuMs)} ms of CPU time (the process seems stuck in a loop)`,
          true,
        ),
      );
    } else if (elapsed >= options.maxMs) {
      stop();
      ac.abort(
        new StartTimeout(
          `no answer to initialize within ${options.maxMs} ms, although the process kept working (the machine may be overloaded)`,
          true,
        ),
      );
    } else if (elapsed >= options.timeoutMs && !busy && !answered) {
      // After the I/O already waiting is read: an idle server may be one whose answer we have not read yet
      // (timers run before reads in an event-loop turn, and a busy machine makes that window wide).
      setImmediate(() => {
        if (answered || ac.signal.aborted || disposed) return;
        stop();
        ac.abort(
          new StartTimeout(
            `no answer to initialize within ${options.timeoutMs} ms (the process was idle)`,
            false,
          ),
        );
      });
    }
  };
  const period = Math.min(interval, options.timeoutMs);
  // A sample scans all of /proc for the descendants (~200 files), which cost a scripted `pda run` a third of its
  // CPU on a busy machine; nothing is decided before the connect timeout, so sampling starts two periods
  // before it (the first sample is the baseline for the second's CPU delta). A start that answers in time, the
  // usual case, is never sampled. A process spinning on several cores is thus caught at the timeout, not before.
  let timer: NodeJS.Timeout | undefined;
  const begin = setTimeout(
    () => {
      timer = setInterval(check, period);
      timer.unref();
      check();
    },
    Math.max(0, options.timeoutMs - 2 * period),
  );
  begin.unref();
  let disposed = false;
  const stop = () => {
    clearTimeout(begin);
    clearInterval(timer);
  };
  return {
    signal: ac.signal,
    answered: () => void (answered = true),
    dispose: () => {
      disposed = true;
      stop();
    },
  };
}
