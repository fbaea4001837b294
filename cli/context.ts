/** How a command reports a failure: its message on stderr and its exit code, never a stack unless --verbose. */
import chalk from "chalk";
import { isPdaError, errorMessage } from "../core/index.js";
import { printJsonError } from "./json-error.js";

/** What a file-system error code means, in words a person acts on. */
const FS_REASONS: Record<string, string> = {
  ENOENT: "no such file or folder",
  ENOTDIR: "a part of the path is a file, not a folder",
  EEXIST: "a file of that name is in the way",
  EISDIR: "it is a folder, not a file",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EROFS: "read-only file system",
  ENOSPC: "no space left on the device",
  ENAMETOOLONG: "the name is too long",
};

/** A Node file-system error (the user's path, not a bug) as one line naming the path; undefined for others. */
export function fileSystemMessage(e: unknown): string | undefined {
  const err = e as NodeJS.ErrnoException;
  if (!(err instanceof Error) || typeof err.code !== "string" || !(err.code in FS_REASONS)) return undefined;
  const what = err.syscall ? `cannot ${err.syscall.replace(/sync$/i, "")} ` : "";
  return `${what}${err.path ?? ""}: ${FS_REASONS[err.code]} (${err.code})`;
}

/**
 * Run a command body. A PdaError becomes its message and exit code; a file-system error its path and reason,
 * exit 2 (a bad path is usage). Anything else is a bug: its message, exit 1, and the stack only with --verbose.
 */
export async function runCommand(body: () => Promise<number | void>): Promise<void> {
  try {
    const code = await body();
    process.exitCode = code ?? 0;
  } catch (e) {
    const fs = fileSystemMessage(e);
    if (isPdaError(e)) {
      process.stderr.write(`${chalk.red("error")} ${e.message}\n`);
      printJsonError(e.code, e.message, e.exitCode);
      process.exitCode = e.exitCode;
    } else if (fs) {
      process.stderr.write(`${chalk.red("error")} ${fs}\n`);
      printJsonError(`FS_${(e as NodeJS.ErrnoException).code}`, fs, 2);
      process.exitCode = 2;
    } else {
      const verbose = process.argv.includes("--verbose");
      const where = verbose
        ? `\n${(e as Error)?.stack ?? ""}`
        : chalk.dim("\n(unexpected: run again with --verbose to see where it happened)");
      process.stderr.write(`${chalk.red("error")} ${errorMessage(e)}${where}\n`);
      printJsonError("INTERNAL", errorMessage(e), 1);
      process.exitCode = 1;
    }
  }
}
