/**
 * `config/models.yaml`: which model each role uses and how it is called (temperature, max tokens, timeout,
 * retries), the price table for cost_usd, and the local default GGUF. The zod schema is the source of truth.
 */
import { join } from "node:path";
import { z } from "zod";
import { parseConfigText } from "../config/index.js";
import { ConfigError, DEFAULT_CONFIG_DIR } from "../core/index.js";
import { readFileSync } from "node:fs";

const Price = z
  .object({ input_per_mtok: z.number().nonnegative(), output_per_mtok: z.number().nonnegative() })
  .strict();

/** Call settings; every field optional so a role can override only some of the defaults. */
export const CallSettings = z
  .object({
    /** `provider[:model]`, e.g. `gemini:gemini-flash-lite-latest`; absent → the default choice. */
    model: z.string().min(1).optional(),
    temperature: z.number().min(0).max(2).optional(),
    max_output_tokens: z.number().int().min(1).optional(),
    timeout_ms: z.number().int().min(1).optional(),
    /** Extra calls after an invalid reply (the repair round). */
    repair_rounds: z.number().int().min(0).max(3).optional(),
  })
  .strict();
export type CallSettings = z.infer<typeof CallSettings>;

export const RetrySettings = z
  .object({
    max_retries: z.number().int().min(0).default(4),
    base_delay_ms: z.number().int().min(0).default(1000),
    max_delay_ms: z.number().int().min(0).default(30_000),
    max_server_delay_ms: z.number().int().min(0).default(120_000),
  })
  .strict();

/**
 * How one family of models is called; the first entry whose `match` fits the model id wins. Users put their
 * own entries first in models.yaml to override or extend the bundled table.
 */
export const ModelFamily = z
  .object({
    /** A regular expression tested against the model id (the part after `provider:`). */
    match: z.string().refine(isRegExp, "not a valid regular expression"),
    provider: z.enum(["openai", "gemini", "anthropic"]),
    /** OpenAI reasoning models (gpt-5, o1, o3, o4-mini): no temperature or top_p, max_completion_tokens. */
    reasoning: z.boolean().default(false),
    /**
     * OpenAI-compatible: how the JSON shape is asked for. `strict`: response_format json_schema with strict
     * true (the schema made strict-compatible); `json_schema`: the schema as guidance (strict false);
     * `json_object`: JSON mode, the schema in the prompt; `prompt`: no response_format, the schema in the prompt.
     */
    structured: z.enum(["strict", "json_schema", "json_object", "prompt"]).optional(),
    /** OpenAI-compatible: the name of the output cap in the request. */
    max_tokens_field: z.enum(["max_tokens", "max_completion_tokens"]).optional(),
    /**
     * OpenAI-compatible: the model takes images, so a tool's pictures go to it as image_url parts; without it
     * the prompt names them only (Gemini models all take images; Anthropic ignores this).
     */
    multimodal: z.boolean().optional(),
    /** OpenAI reasoning models: reasoning_effort sent as is. */
    reasoning_effort: z.enum(["none", "minimal", "low", "medium", "high"]).optional(),
    /** A temperature this family must be called with, whatever the role asks (Gemini 3: 1.0). */
    temperature: z.number().min(0).max(2).optional(),
    /** Gemini 3: thinkingConfig.thinkingLevel. */
    thinking_level: z.enum(["minimal", "low", "medium", "high"]).optional(),
    /** Gemini 2.5: thinkingConfig.thinkingBudget in tokens (-1 = dynamic); also added to the output cap. */
    thinking_budget: z.number().int().min(-1).optional(),
    /** Tokens added to the output cap for thinking when no budget says how many (Gemini 3, Claude adaptive). */
    thinking_reserve: z.number().int().min(0).optional(),
    /**
     * Anthropic: how the JSON shape is asked for. `json_schema`: structured outputs (output_config.format, the
     * schema made strict-compatible by the SDK); `tool`: one tool whose input_schema is the schema, forced with
     * tool_choice (every Claude model with tool use; no thinking with it); `prompt`: the schema in the prompt.
     */
    anthropic_output: z.enum(["json_schema", "tool", "prompt"]).optional(),
    /** Anthropic adaptive thinking: thinking {type: adaptive} with output_config.effort. */
    effort: z.enum(["low", "medium", "high", "xhigh", "max"]).optional(),
  })
  .strict()
  .superRefine((f, ctx) => {
    if (f.provider !== "anthropic") return;
    const say = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
    // The API's own rules, caught when models.yaml is read rather than on the first call.
    if (f.thinking_budget !== undefined && f.thinking_budget < 1024) {
      say("thinking_budget", "Anthropic thinking budgets are at least 1024 tokens");
    }
    if (f.thinking_budget !== undefined && f.effort !== undefined) {
      say("effort", "choose thinking_budget (manual thinking) or effort (adaptive thinking), not both");
    }
    if (f.anthropic_output === "tool" && (f.thinking_budget !== undefined || f.effort !== undefined)) {
      say("anthropic_output", "a forced tool cannot be combined with thinking; use json_schema or prompt");
    }
  });
export type ModelFamily = z.infer<typeof ModelFamily>;

function isRegExp(s: string): boolean {
  try {
    new RegExp(s);
    return true;
  } catch {
    return false;
  }
}

/** The first family entry for this provider whose pattern matches the model id. */
export function familyOf(config: ModelsFile, provider: string, model: string): ModelFamily | undefined {
  return config.families.find((f) => f.provider === provider && new RegExp(f.match).test(model));
}

export const LocalModel = z
  .object({
    /** Where the file comes from; an `hf:` spec or an https URL. */
    url: z.string().url(),
    file: z.string().min(1),
    sha256: z.string().regex(/^[0-9a-f]{64}$/, "a lowercase hex sha256"),
    size_bytes: z.number().int().positive(),
    description: z.string().default(""),
  })
  .strict();
export type LocalModel = z.infer<typeof LocalModel>;

export const ModelsFile = z
  .object({
    /** Settings every role starts from. */
    defaults: CallSettings.default({}),
    /** Per-role overrides: perception, decision, ... */
    roles: z.record(z.string(), CallSettings).default({}),
    retry: RetrySettings.default(RetrySettings.parse({})),
    /** Per-family request rules (first match wins). */
    families: z.array(ModelFamily).default([]),
    openai: z
      .object({
        /** Structured-output mode for a model no family entry matches (a local server: Ollama, vLLM, ...). */
        structured: z.enum(["strict", "json_schema", "json_object", "prompt"]).default("json_schema"),
      })
      .strict()
      .default({ structured: "json_schema" }),
    llama: z
      .object({
        context_size: z.number().int().min(256).default(4096),
        /** CPU threads; 0 = one less than the cores, at least 1. */
        threads: z.number().int().min(0).default(0),
        /**
         * `auto`: the best prebuilt binary node-llama-cpp finds (CUDA, Vulkan, Metal, else CPU); `false`: CPU
         * only; or one backend by name.
         */
        gpu: z.union([z.enum(["auto", "cuda", "vulkan", "metal"]), z.literal(false)]).default("auto"),
      })
      .strict()
      .default({ context_size: 4096, threads: 0, gpu: "auto" }),
    local_default: LocalModel.optional(),
    /** USD per million tokens, by model id (the part after `provider:`). */
    costs: z.record(z.string(), Price).default({}),
  })
  .strict();
export type ModelsFile = z.infer<typeof ModelsFile>;

/** Parse models.yaml text; errors name file:line:field. */
export function parseModelsConfig(file: string, text: string): ModelsFile {
  return parseConfigText(file, text, ModelsFile);
}

/** Load `models.yaml` from a config folder. */
export function loadModelsConfig(dir: string): ModelsFile {
  const file = join(dir, "models.yaml");
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new ConfigError(`cannot read ${file}: ${(e as Error).message}`, { cause: e });
  }
  return parseModelsConfig(file, text);
}

/** The settings for one role: defaults, then the role's overrides. */
export function roleSettings(config: ModelsFile, role: string): CallSettings {
  // A sub-agent's role "pick.decision" starts from "decision" and may have its own entry on top.
  const base = role.includes(".") ? config.roles[role.slice(role.lastIndexOf(".") + 1)] : undefined;
  return { ...config.defaults, ...stripUndefined(base ?? {}), ...stripUndefined(config.roles[role] ?? {}) };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

let bundled: ModelsFile | undefined;

/** The bundled config/models.yaml (read once). */
export function bundledModelsConfig(): ModelsFile {
  bundled ??= loadModelsConfig(DEFAULT_CONFIG_DIR);
  return bundled;
}
