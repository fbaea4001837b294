/**
 * `pda models`: the providers, which one is the default and why, and what each role uses (with its
 * settings and whether it is ready). Never fails for a missing key: it says what is missing instead.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import chalk from "chalk";
import type { Command } from "commander";
import { configDir, configFile } from "../config/index.js";
import { errorMessage } from "../core/index.js";
import {
  DEFAULT_ANTHROPIC_MODEL,
  DEFAULT_GEMINI_MODEL,
  DEFAULT_OPENAI_BASE_URL,
  chooseDefault,
  createTransport,
  hfSpec,
  loadModelsConfig,
  modelCacheDir,
  parseModelSpec,
  roleSettings,
  roleSpec,
  type ModelsFile,
} from "../llm/index.js";
import { runCommand } from "./context.js";

interface ModelsReport {
  providers: Array<{ name: string; what: string; status: string }>;
  default: { spec: string; reason: string };
  roles: Array<{
    role: string;
    spec: string;
    source: string;
    ready: boolean;
    /** ready; not downloaded (a local model fetched on first use); not ready (the problem says why). */
    state: "ready" | "not downloaded" | "not ready";
    problem?: string;
    temperature?: number;
    max_output_tokens?: number;
    timeout_ms?: number;
    price?: { input_per_mtok: number; output_per_mtok: number };
  }>;
  config: string;
}

export function modelsReport(
  config: ModelsFile,
  configPath: string,
  cliModel: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): ModelsReport {
  const local = config.local_default;
  const cache = modelCacheDir(env);
  const localStatus = local
    ? `local default ${local.description || local.file}: ` +
      (existsSync(join(cache, local.file)) ? `cached in ${cache}` : `not downloaded yet (→ ${cache})`)
    : "no local_default in models.yaml";
  const providers = [
    {
      name: "gemini",
      what: `Google Gemini via @google/genai (default model ${DEFAULT_GEMINI_MODEL})`,
      status: env.GEMINI_API_KEY
        ? `GEMINI_API_KEY set${env.GEMINI_BASE_URL ? `, GEMINI_BASE_URL=${env.GEMINI_BASE_URL}` : ""}`
        : "GEMINI_API_KEY not set",
    },
    {
      name: "openai",
      what: "OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, LM Studio)",
      status: env.OPENAI_BASE_URL
        ? `OPENAI_BASE_URL=${env.OPENAI_BASE_URL}${env.OPENAI_API_KEY ? ", OPENAI_API_KEY set" : ""}`
        : `OPENAI_BASE_URL not set (${DEFAULT_OPENAI_BASE_URL} needs OPENAI_API_KEY${env.OPENAI_API_KEY ? ": set" : ": not set"})`,
    },
    {
      name: "anthropic",
      what: `Anthropic Claude via @anthropic-ai/sdk (default model ${DEFAULT_ANTHROPIC_MODEL})`,
      status:
        (env.ANTHROPIC_API_KEY
          ? "ANTHROPIC_API_KEY set"
          : env.ANTHROPIC_AUTH_TOKEN
            ? "ANTHROPIC_AUTH_TOKEN set"
            : "ANTHROPIC_API_KEY not set") +
        (env.ANTHROPIC_BASE_URL ? `, ANTHROPIC_BASE_URL=${env.ANTHROPIC_BASE_URL}` : ""),
    },
    { name: "llama", what: "local GGUF via node-llama-cpp (CPU, schema grammar)", status: localStatus },
    {
      name: "scripted",
      what: "replies played back from a YAML/JSON file (tests, demos)",
      status: "--model scripted:<file>",
    },
  ];
  const choice = chooseDefault(env, config);
  const roles = [...new Set(["perception", "decision", ...Object.keys(config.roles)])].map((role) => {
    const { spec, source } = roleSpec(config, role, cliModel, choice);
    const s = roleSettings(config, role);
    let problem: string | undefined;
    try {
      // Building the transport checks keys and spec syntax without calling anything.
      createTransport(spec, { env, config });
    } catch (e) {
      problem = errorMessage(e);
    }
    const missing = problem ? undefined : localFileMissing(spec, config, env);
    const model = spec
      ? parseModelSpec(spec).model || (spec.startsWith("gemini") ? DEFAULT_GEMINI_MODEL : "")
      : "";
    return {
      role,
      spec: spec || "(none)",
      source,
      ready: !problem && !missing,
      state: problem ? ("not ready" as const) : missing ? ("not downloaded" as const) : ("ready" as const),
      ...(problem || missing ? { problem: problem ?? missing } : {}),
      temperature: s.temperature,
      max_output_tokens: s.max_output_tokens,
      timeout_ms: s.timeout_ms,
      ...(config.costs[model] ? { price: config.costs[model] } : {}),
    };
  });
  return { providers, default: choice, roles, config: configPath };
}

/** For a local model not on disk yet: where it would come from and go; undefined otherwise. */
function localFileMissing(spec: string, config: ModelsFile, env: NodeJS.ProcessEnv): string | undefined {
  const { provider, model } = parseModelSpec(spec);
  if (provider !== "llama") return undefined;
  const cache = modelCacheDir(env);
  if (!model) {
    const local = config.local_default;
    if (!local || existsSync(join(cache, local.file))) return undefined;
    return `not downloaded yet: fetched on first use (${local.description || local.file}) into ${cache}`;
  }
  if (model.startsWith("hf:")) {
    const file = hfSpec(model, env).file;
    return existsSync(join(cache, file))
      ? undefined
      : `not downloaded yet: fetched on first use into ${cache}`;
  }
  return existsSync(model) ? undefined : `${model} does not exist`;
}

export function registerModels(program: Command): void {
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
