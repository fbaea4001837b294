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
    openai: z
      .object({
        /** `auto`: try response_format json_schema, fall back to json_object if the server rejects it. */
        json_schema: z.enum(["auto", "always", "never"]).default("auto"),
      })
      .strict()
      .default({ json_schema: "auto" }),
    llama: z
      .object({
        context_size: z.number().int().min(256).default(4096),
        /** CPU threads; 0 = one less than the cores, at least 1. */
        threads: z.number().int().min(0).default(0),
      })
      .strict()
      .default({ context_size: 4096, threads: 0 }),
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
