/** `pda call`: its options, help and action; what it shares with other commands is in ../hub.ts. */
import chalk from "chalk";
import type { Command } from "commander";
import { ConfigError, ToolError } from "../../core/index.js";
import { runCommand } from "../context.js";
import { parseDurationMs } from "../duration.js";
import { printJsonError } from "../json-error.js";
import { FORM_HELP, SAMPLING_MODEL_HELP, exitCodeFor, terminalJson, withHub } from "../hub.js";

export function register(program: Command): void {
  program
    .command("call")
    .description(
      "call one tool and print its result as JSON (exit 1 tool error, 2 bad usage, 3 server unreachable)",
    )
    .argument("<tool>", "server.tool (or a tool name unique across servers)")
    .argument("[json]", "the arguments as a JSON object", "{}")
    .option("--hil <channel>", FORM_HELP)
    .option("--model <spec>", SAMPLING_MODEL_HELP)
    .option("--json", "a failed call as {error: {code, message, exit_code}} (the result is JSON already)")
    .option("--timeout <duration>", "per-call timeout: 30s, 2m, 500ms or plain milliseconds")
    .action((tool: string, json: string, opts: { timeout?: string }, cmd: Command) =>
      runCommand(async () => {
        const timeoutMs = opts.timeout === undefined ? undefined : parseDurationMs(opts.timeout, "--timeout");
        let args: unknown;
        try {
          args = JSON.parse(json);
        } catch (e) {
          throw new ConfigError(`arguments are not valid JSON: ${(e as Error).message}`);
        }
        if (args === null || typeof args !== "object" || Array.isArray(args)) {
          throw new ConfigError(`arguments must be a JSON object like '{"a": 1}', got ${json}`);
        }
        const dot = tool.indexOf(".");
        // A qualified name needs only its own server started.
        const only = dot > 0 ? [tool.slice(0, dot)] : undefined;
        return withHub(cmd, only ? { only } : {}, async (hub) => {
          if (only && !hub.status().some((s) => s.id === only[0])) {
            throw new ConfigError(
              `no server named "${only[0]}" (known: ${hub
                .status()
                .map((s) => s.id)
                .join(", ")})`,
            );
          }
          try {
            const value = await hub.call(tool, args as Record<string, unknown>, { timeoutMs });
            process.stdout.write(`${terminalJson(value)}\n`);
            return 0;
          } catch (e) {
            if (!(e instanceof ToolError)) throw e;
            process.stderr.write(`${chalk.red("error")} ${e.code}: ${e.message}\n`);
            printJsonError(e.code, e.message, exitCodeFor(e));
            return exitCodeFor(e);
          }
        });
      }),
    );
}
