/**
 * `pda models`: the providers, which one is the default and why, and what each role uses (with its
 * settings and whether it is ready). Never fails for a missing key: it says what is missing instead.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { errorMessage } from "../core/index.js";
import {
  DEFAULT_ANTHROPIC_MODEL,
  DEFAULT_GEMINI_MODEL,
  DEFAULT_OPENAI_BASE_URL,
  chooseDefault,
  createTransport,
  hfSpec,
  modelCacheDir,
  parseModelSpec,
  roleSettings,
  roleSpec,
  type ModelsFile,
} from "../llm/index.js";

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
