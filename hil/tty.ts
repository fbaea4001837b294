/**
 * Where a person at a terminal can be asked. `pda run … --json > out.json` started at a terminal has stdout
 * in a file but a person at the keyboard: questions go to the controlling terminal (/dev/tty, as ssh and git
 * ask for passwords), or to stderr when stdin is the terminal and /dev/tty cannot be opened. When none of
 * stdin, stdout and stderr is a terminal (CI, cron, a test harness), nobody is asked, even if the process
 * still has a controlling terminal: an unattended run never waits on a keyboard.
 */
import { closeSync, openSync } from "node:fs";
import { ReadStream, WriteStream } from "node:tty";

/** "stdio": stdin and stdout; "tty": the controlling terminal; "stderr": stdin and stderr. */
export type TerminalKind = "stdio" | "tty" | "stderr";

export interface TerminalStreams {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  /** Releases what open() opened (nothing for stdio and stderr). */
  close(): void;
}

interface Std {
  stdin: { isTTY?: boolean };
  stdout: { isTTY?: boolean };
  stderr: { isTTY?: boolean };
}

export const CONTROLLING_TERMINAL = "/dev/tty";

/** The terminal a person can answer at, or undefined when nobody can be asked. */
export function findTerminal(std: Std = process, device = CONTROLLING_TERMINAL): TerminalKind | undefined {
  const [stdin, stdout, stderr] = [!!std.stdin.isTTY, !!std.stdout.isTTY, !!std.stderr.isTTY];
  if (stdin && stdout) return "stdio";
  if (!stdin && !stdout && !stderr) return undefined;
  try {
    closeSync(openSync(device, "r+"));
    return "tty";
  } catch {
    // No controlling terminal (ENXIO) or no /dev/tty (Windows).
    return stdin && stderr ? "stderr" : undefined;
  }
}

/** Streams for one question at `kind`; /dev/tty is opened per question so nothing stays open between them. */
export function openTerminal(kind: TerminalKind, device = CONTROLLING_TERMINAL): TerminalStreams {
  if (kind === "stdio") return { input: process.stdin, output: process.stdout, close: () => {} };
  if (kind === "stderr") return { input: process.stdin, output: process.stderr, close: () => {} };
  const input = new ReadStream(openSync(device, "r"));
  const output = new WriteStream(openSync(device, "w"));
  return {
    input,
    output,
    close: () => {
      input.destroy();
      output.destroy();
    },
  };
}
