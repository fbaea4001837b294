/** `pda models`: its options, help and action; what it shares with other commands is in ../models.ts. */
import { dirname } from "node:path";
import chalk from "chalk";
import type { Command } from "commander";
import { configDir, configFile } from "../../config/index.js";
import { loadModelsConfig } from "../../llm/index.js";
import { runCommand } from "../context.js";
import { modelsReport } from "../models.js";

export function register(program: Command): void {
  program
    .command("models")
    .description("list the model providers, the default choice and why, and what each role uses")
    .option("--model <provider[:model]>", "as for run: the model every role would use")
    .option("--json", "print the report as JSON")
    .action((opts: { model?: string; json?: boolean }, cmd: Command) =>
      runCommand(() => {
        const globals = cmd.optsWithGlobals<{ config?: string }>();
        const file = configFile(configDir(globals.config), "models.yaml");
        const report = modelsReport(loadModelsConfig(dirname(file)), file, opts.model);
        if (opts.json) {
          process.stdout.write(JSON.stringify(report, null, 2) + "\n");
          return Promise.resolve(0);
        }
        const out: string[] = [chalk.bold("Providers")];
        for (const p of report.providers) {
          out.push(
            `  ${chalk.cyan(p.name.padEnd(9))} ${p.what}`,
            `  ${" ".repeat(9)} ${chalk.dim(p.status)}`,
          );
        }
        out.push(
          "",
          `${chalk.bold("Default")}  ${report.default.spec || "(none)"} — ${report.default.reason}`,
          chalk.dim(
            "  order: GEMINI_API_KEY → gemini; else OPENAI_BASE_URL → openai; else the local default GGUF",
          ),
          "",
          chalk.bold("Roles") + chalk.dim(`  (${report.config})`),
        );
        for (const r of report.roles) {
          const settings = [
            r.temperature !== undefined ? `temperature ${r.temperature}` : "",
            r.max_output_tokens ? `max ${r.max_output_tokens} tokens` : "",
            r.timeout_ms ? `timeout ${Math.round(r.timeout_ms / 1000)} s` : "",
            r.price ? `$${r.price.input_per_mtok}/$${r.price.output_per_mtok} per M tokens in/out` : "",
          ].filter(Boolean);
          const mark =
            r.state === "ready"
              ? chalk.green(r.state)
              : r.state === "not downloaded"
                ? chalk.yellow(r.state)
                : chalk.red(r.state);
          const spec = r.spec === "llama:" ? "llama:(local default)" : r.spec;
          const source = r.source.startsWith("default:") ? "default choice" : r.source;
          out.push(`  ${r.role.padEnd(11)} ${chalk.cyan(spec)}  ${mark}  ${chalk.dim(`(${source})`)}`);
          out.push(`  ${" ".repeat(11)} ${chalk.dim(settings.join(", "))}`);
          if (r.problem) out.push(`  ${" ".repeat(11)} ${r.ready ? r.problem : chalk.red(r.problem)}`);
        }
        process.stdout.write(out.join("\n") + "\n");
        return Promise.resolve(0);
      }),
    );
}
