/** Errors as JSON under `--json`; imports nothing, so the command table (cli/commands/) can use it cheaply. */

/** `--json` anywhere on the command line: errors are printed as JSON objects too. */
export const jsonRequested = (argv = process.argv) => argv.includes("--json");

/**
 * With --json, an error as one JSON object on stdout (where the JSON reader is), beside its line on stderr:
 * `{"error": {"code", "message", "exit_code"}}`. Codes are the PdaError codes (core/errors.ts), `FS_<errno>`
 * for a bad path, `USAGE` for a bad command line and `INTERNAL` for a bug.
 */
export function printJsonError(code: string, message: string, exitCode: number): void {
  if (!jsonRequested()) return;
  process.stdout.write(`${JSON.stringify({ error: { code, message, exit_code: exitCode } }, null, 2)}\n`);
}
