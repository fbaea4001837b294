/**
 * `pda exec <file|->`: run sandbox code against the configured hub and print the ExecutionResult as JSON —
 * how a person tries and debugs tool code. Console lines also go to stderr as they happen.
 * Exit codes: 0 the code returned; 1 it failed (the error is in the JSON); 2 bad usage or configuration.
 */
import { readFileSync } from "node:fs";
import chalk from "chalk";
import { Option, type Command } from "commander";
import { runCode } from "../../action/index.js";
import { SandboxLimits, configDir, loadProfile } from "../../config/index.js";
import { ConfigError, errorMessage } from "../../core/index.js";
import { MultiMCP } from "../../mcp_servers/index.js";
import { createChannel } from "../../hil/index.js";
import { runCommand } from "../context.js";
import { parseDurationMs } from "../duration.js";
import { answerElicitations } from "../elicit.js";
import { hubNamespaces } from "../services.js";
import { FORM_HELP, SAMPLING_MODEL_HELP, hubConfigFile } from "../hub.js";
import { attachSampling } from "../sampling.js";
import { keepSandboxOnBaseline } from "../wasm-budget.js";

interface ExecOptions {
  profile?: string;
  maxToolCalls?: string;
  timeout?: string;
  timeoutMs?: string;
  config?: string;
  hil?: string;
  model?: string;
}

/** Checked inside the command (not as a commander parser) so bad values exit 2 like other usage errors. */
function wholeNumber(flag: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min)
    throw new ConfigError(`${flag}: expected a whole number ≥ ${min}, got "${value}"`);
  return n;
}

function readCode(source: string): string {
  try {
    return readFileSync(source === "-" ? 0 : source, "utf8");
  } catch (e) {
    throw new ConfigError(`cannot read ${source === "-" ? "standard input" : source}: ${errorMessage(e)}`);
  }
}

export function register(program: Command): void {
  program
    .command("exec")
    .description(
      "run sandbox code against the configured MCP servers and print the result as JSON (exit 1 if it failed)",
    )
    .argument("<file>", "a JavaScript file, or - for standard input")
    .option(
      "--profile <name>",
      "sandbox limits from config/profiles.yaml (default: the file's default profile)",
    )
    .option("--max-tool-calls <n>", "override the profile's sandbox.max_tool_calls")
    .option("--timeout <duration>", "override the profile's sandbox.timeout_ms: 30s, 2m, 500ms or plain ms")
    .addOption(new Option("--timeout-ms <ms>", "the old name of --timeout").hideHelp())
    .option("--hil <channel>", FORM_HELP)
    .option("--json", "errors as JSON objects too (the result is always JSON)")
    .option("--model <spec>", SAMPLING_MODEL_HELP)
    .action((file: string, _opts: ExecOptions, cmd: Command) =>
      runCommand(async () => {
        const opts = cmd.optsWithGlobals() as ExecOptions;
        const maxToolCalls = wholeNumber("--max-tool-calls", opts.maxToolCalls, 0);
        const timeoutMs =
          opts.timeout !== undefined
            ? parseDurationMs(opts.timeout, "--timeout")
            : opts.timeoutMs !== undefined
              ? parseDurationMs(opts.timeoutMs, "--timeout-ms")
              : undefined;
        const { profile } = loadProfile(configDir(opts.config), opts.profile);
        const limits = SandboxLimits.parse({
          ...profile.sandbox,
          ...(maxToolCalls !== undefined && { max_tool_calls: maxToolCalls }),
          ...(timeoutMs !== undefined && { timeout_ms: timeoutMs }),
        });
        const code = readCode(file);
        const human = createChannel(opts.hil, {});
        const hub = await MultiMCP.start(hubConfigFile(opts.config));
        answerElicitations(hub, human);
        const sampling = attachSampling(hub, human, opts);
        const controller = new AbortController();
        // The first Ctrl-C cancels the step (its result is still printed); servers are closed below.
        const onSignal = () => controller.abort();
        process.once("SIGINT", onSignal);
        process.once("SIGTERM", onSignal);
        try {
          for (const s of hub.status().filter((s) => s.state === "failed")) {
            process.stderr.write(
              `${chalk.yellow("warning")} server ${s.id} is not available: ${s.lastError}\n`,
            );
          }
          keepSandboxOnBaseline();
          const result = await runCode(code, hub, limits, {
            signal: controller.signal,
            namespaces: hubNamespaces(hub),
            onLog: (line) => process.stderr.write(`${chalk.dim(line)}\n`),
          });
          process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
          return result.ok ? 0 : 1;
        } finally {
          process.off("SIGINT", onSignal);
          process.off("SIGTERM", onSignal);
          await hub.close();
          await sampling.close();
        }
      }),
    );
}
