/**
 * `--model <provider[:model]>` → a ModelProvider. Specs: `gemini[:model]`, `openai[:model]`, `anthropic[:model]`,
 * `llama:<path | hf:owner/repo/file.gguf>` (empty = the local default GGUF), `scripted:<file>`;
 * no spec → the default choice (chooseDefault). `createModels` gives one provider per role from models.yaml.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  ConfigError,
  ModelError,
  type Clock,
  type GenerateRequest,
  type GenerateResult,
  type ModelProvider,
} from "../core/index.js";
import { AnthropicTransport, DEFAULT_ANTHROPIC_MODEL } from "./anthropic.js";
import { bundledModelsConfig, familyOf, type ModelsFile, roleSettings, type CallSettings } from "./config.js";
import { modelCacheDir, type DownloadOptions } from "./download.js";
import { DEFAULT_GEMINI_MODEL, GeminiTransport } from "./gemini.js";
import { LlamaTransport } from "./llama.js";
import { noModelMessage } from "./no-model.js";
import { OpenAITransport } from "./openai.js";
import { DEFAULT_RETRY, type RetryPolicy } from "./retry.js";
import { ScriptedTransport, type Script, type ScriptedCall, type ScriptTolerance } from "./scripted.js";
import { StructuredProvider, type ModelPrice, type StructuredOptions, type Transport } from "./structured.js";

export interface ProviderOptions {
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  /** Overrides GEMINI_BASE_URL / OPENAI_BASE_URL / ANTHROPIC_BASE_URL. */
  baseUrl?: string;
  apiKey?: string;
  temperature?: number;
  max_output_tokens?: number;
  timeout_ms?: number;
  retry?: RetryPolicy;
  /** Extra calls after an invalid reply (default 1). */
  repair_rounds?: number;
  /** USD per million tokens by model id, for cost_usd on results (default: models.yaml costs). */
  costs?: Record<string, ModelPrice>;
  /** Uniform [0, 1) for retry jitter; injectable for tests. */
  random?: () => number;
  /** models.yaml (parsed); the bundled config/models.yaml when absent. */
  config?: ModelsFile;
  download?: DownloadOptions;
}

export const PROVIDER_NAMES = ["gemini", "openai", "anthropic", "llama", "scripted"] as const;

/** Split `provider[:model]`; the model part may itself contain colons (hf:repo/file, C:\ paths). */
export function parseModelSpec(spec: string): { provider: string; model: string } {
  const i = spec.indexOf(":");
  const provider = (i < 0 ? spec : spec.slice(0, i)).trim().toLowerCase();
  const model = i < 0 ? "" : spec.slice(i + 1).trim();
  if (!(PROVIDER_NAMES as readonly string[]).includes(provider)) {
    throw new ConfigError(
      `--model ${spec}: unknown provider "${provider}" (use gemini[:model], openai:<model>, anthropic[:model], ` +
        `llama:<file.gguf | hf:owner/repo/file.gguf>, or scripted:<file>)`,
      { code: "MODEL_SPEC_INVALID" },
    );
  }
  return { provider, model };
}

export interface DefaultChoice {
  /** The spec chosen, e.g. "gemini", "openai", "llama:". */
  spec: string;
  /** Why, in one line for `pda models`. */
  reason: string;
}

/**
 * The model used when none is named: Gemini when GEMINI_API_KEY is set, else the OpenAI-compatible server
 * at OPENAI_BASE_URL, else the local default GGUF (downloaded once into the user's cache).
 */
export function chooseDefault(env: NodeJS.ProcessEnv = process.env, config?: ModelsFile): DefaultChoice {
  if (env.GEMINI_API_KEY) return { spec: "gemini", reason: "GEMINI_API_KEY is set" };
  if (env.GOOGLE_API_KEY) return { spec: "gemini", reason: "GOOGLE_API_KEY is set" };
  if (env.GOOGLE_GENAI_USE_VERTEXAI?.toLowerCase() === "true") {
    return { spec: "gemini", reason: "GOOGLE_GENAI_USE_VERTEXAI is set (Gemini on Vertex AI)" };
  }
  if (env.OPENAI_BASE_URL) {
    return {
      spec: env.OPENAI_MODEL ? `openai:${env.OPENAI_MODEL}` : "openai",
      reason:
        `OPENAI_BASE_URL is set (${env.OPENAI_BASE_URL}) and GEMINI_API_KEY is not` +
        (env.OPENAI_MODEL
          ? ""
          : "; the model is the first one the server lists (set OPENAI_MODEL to choose)"),
    };
  }
  const local = config?.local_default;
  if (!local) {
    return { spec: "", reason: "no GEMINI_API_KEY, no OPENAI_BASE_URL, and no local_default in models.yaml" };
  }
  const cached = existsSync(join(modelCacheDir(env), local.file));
  return {
    spec: "llama:",
    reason:
      `neither GEMINI_API_KEY nor OPENAI_BASE_URL is set: the local default model ${local.description || local.file}` +
      (cached ? `, cached in ${modelCacheDir(env)}` : `, downloaded on first use into ${modelCacheDir(env)}`),
  };
}

const NOTHING_CONFIGURED = noModelMessage(
  "GEMINI_API_KEY and OPENAI_BASE_URL are not set, and models.yaml has no local_default",
);

/** One provider for a `--model` spec (call settings from `options`); MODEL_NO_KEY (exit 3) when a key is missing. */
export function createProvider(spec: string | undefined, options: ProviderOptions = {}): ModelProvider {
  const config = options.config ?? bundledModelsConfig();
  const resolved = spec || chooseDefault(options.env ?? process.env, config).spec;
  const transport = createTransport(resolved, options);
  const settings: CallSettings = {
    ...config.defaults,
    ...definedOnly({
      temperature: options.temperature,
      max_output_tokens: options.max_output_tokens,
      timeout_ms: options.timeout_ms,
      repair_rounds: options.repair_rounds,
    }),
  };
  return wrap(transport, settings, options, config);
}

function wrap(transport: Transport, settings: CallSettings, options: ProviderOptions, config: ModelsFile) {
  const structured: StructuredOptions = {
    clock: options.clock,
    repair_rounds: settings.repair_rounds,
    costs: options.costs ?? config.costs,
    call: {
      temperature: settings.temperature,
      max_output_tokens: settings.max_output_tokens,
      timeout_ms: settings.timeout_ms,
    },
  };
  return transport instanceof ScriptedTransport
    ? new ScriptedProvider(transport, structured)
    : new StructuredProvider(transport, structured);
}

/** The transport for a spec: the wire client, with retries and timeouts, no parsing. */
export function createTransport(spec: string, options: ProviderOptions = {}): Transport {
  const env = options.env ?? process.env;
  const config = options.config ?? bundledModelsConfig();
  if (!spec) throw new ModelError("MODEL_NO_KEY", NOTHING_CONFIGURED);
  const { provider, model } = parseModelSpec(spec);
  const retry = options.retry ?? config.retry ?? DEFAULT_RETRY;
  const common = { env, clock: options.clock, random: options.random, retry, timeout_ms: options.timeout_ms };
  switch (provider) {
    case "gemini":
      return new GeminiTransport({
        ...common,
        model,
        apiKey: options.apiKey,
        baseUrl: options.baseUrl,
        family: familyOf(config, "gemini", model || DEFAULT_GEMINI_MODEL),
      });
    case "openai":
      return new OpenAITransport({
        ...common,
        model,
        apiKey: options.apiKey,
        baseUrl: options.baseUrl,
        familyOf: (id) => familyOf(config, "openai", id),
        structured: config.openai.structured,
      });
    case "anthropic": {
      const id = model || env.ANTHROPIC_MODEL || DEFAULT_ANTHROPIC_MODEL;
      return new AnthropicTransport({
        ...common,
        model: id,
        apiKey: options.apiKey,
        baseUrl: options.baseUrl,
        family: familyOf(config, "anthropic", id),
      });
    }
    case "llama":
      return new LlamaTransport({
        model,
        localDefault: config.local_default,
        context_size: config.llama.context_size,
        threads: config.llama.threads,
        gpu: config.llama.gpu,
        download: { env, ...options.download },
      });
    case "scripted":
      if (!model) {
        throw new ConfigError("--model scripted:<file>: the script file is missing", {
          code: "MODEL_SPEC_INVALID",
        });
      }
      return ScriptedTransport.fromFile(model);
    default:
      throw new ConfigError(`--model ${spec}: unknown provider`, { code: "MODEL_SPEC_INVALID" });
  }
}

/** The scripted provider, with what tests need: leftover turns and what the model was shown. */
export class ScriptedProvider extends StructuredProvider {
  constructor(
    private readonly script: ScriptedTransport,
    options: StructuredOptions = {},
  ) {
    super(script, options);
  }

  /** Build from an in-memory script (e.g. `pda replay` from a logged session). */
  static fromScript(script: Script, source = "inline", options: StructuredOptions = {}) {
    return new ScriptedProvider(new ScriptedTransport(script, source), options);
  }

  /** Replies never played, per role ({} when all were used). */
  unconsumed(): Record<string, number> {
    return this.script.unconsumed();
  }

  /** Allows the script leftover turns or calls past its end (see ScriptedTransport.tolerate). */
  tolerate(what: ScriptTolerance): this {
    this.script.tolerate(what);
    return this;
  }

  /** Every turn played, in order, with the system text and prompt the model was shown. */
  get calls(): readonly ScriptedCall[] {
    return this.script.calls;
  }
}

export interface RoleModel {
  role: string;
  /** The spec in effect, e.g. "gemini:gemini-flash-latest". */
  spec: string;
  provider: string;
  model: string;
  /** Where the choice came from: --model, models.yaml roles.<role>.model, defaults.model, or the default choice. */
  source: string;
  settings: CallSettings;
}

/**
 * One ModelProvider for the whole loop that routes each request by its role to that role's provider
 * (models.yaml: perception may use a cheaper model than decision). `--model` wins for every role.
 * Roles sharing a spec share one transport (one loaded local model, one script).
 */
export class ModelRouter implements ModelProvider {
  private readonly transports = new Map<string, Transport>();
  private readonly byRole = new Map<string, { provider: ModelProvider; info: RoleModel }>();
  private readonly config: ModelsFile;
  private readonly defaultChoice: DefaultChoice;

  constructor(private readonly options: ProviderOptions & { model?: string; roles?: string[] } = {}) {
    this.config = options.config ?? bundledModelsConfig();
    this.defaultChoice = chooseDefault(options.env ?? process.env, this.config);
    // Build the loop's roles now, so a missing key fails at start-up (exit 3), not mid-session.
    for (const role of options.roles ?? ["perception", "decision"]) this.forRole(role);
  }

  get provider(): string {
    return this.forRole("decision").provider;
  }

  get model(): string {
    return this.forRole("decision").model;
  }

  generate<T>(request: GenerateRequest<T>): Promise<GenerateResult<T>> {
    return this.forRole(request.role).generate(request);
  }

  /** The provider a role uses. */
  forRole(role: string): ModelProvider {
    return this.entry(role).provider;
  }

  /** What each role uses and why, for `pda models` and traces. */
  describe(roles?: string[]): RoleModel[] {
    const names = roles ?? [...new Set(["perception", "decision", ...Object.keys(this.config.roles)])];
    return names.map((r) => ({ ...this.entry(r).info, model: this.entry(r).provider.model }));
  }

  get defaultModel(): DefaultChoice {
    return this.defaultChoice;
  }

  /** Scripted replies never played, by role, across scripted transports. */
  unconsumed(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const t of this.transports.values()) {
      if (t instanceof ScriptedTransport) Object.assign(out, t.unconsumed());
    }
    return out;
  }

  /** Make every role's model usable now (download the local model file), before a session starts. */
  async prepare(): Promise<void> {
    for (const t of this.transports.values()) await t.prepare?.();
  }

  /** Release local models. */
  async close(): Promise<void> {
    for (const t of this.transports.values()) if (t instanceof LlamaTransport) await t.close();
  }

  private entry(role: string) {
    let e = this.byRole.get(role);
    if (e) return e;
    const settings = roleSettings(this.config, role);
    const { spec, source } = roleSpec(this.config, role, this.options.model, this.defaultChoice);
    let transport = this.transports.get(spec);
    if (!transport) {
      transport = createTransport(spec, { ...this.options, config: this.config });
      this.transports.set(spec, transport);
    }
    const provider = wrap(
      transport,
      { ...settings, ...definedOnly(pick(this.options)) },
      this.options,
      this.config,
    );
    e = {
      provider,
      info: { role, spec, provider: provider.provider, model: provider.model, source, settings },
    };
    this.byRole.set(role, e);
    return e;
  }
}

/** Which spec a role uses and where that came from: --model, then models.yaml, then the default choice. */
export function roleSpec(
  config: ModelsFile,
  role: string,
  cliModel: string | undefined,
  defaultChoice: DefaultChoice,
): { spec: string; source: string } {
  if (cliModel) return { spec: cliModel, source: "--model" };
  const roleModel = config.roles[role]?.model;
  if (roleModel) return { spec: roleModel, source: `models.yaml roles.${role}.model` };
  // A sub-agent's role "pick.decision" falls back to the model of "decision".
  const base = role.includes(".") ? role.slice(role.lastIndexOf(".") + 1) : undefined;
  const baseModel = base ? config.roles[base]?.model : undefined;
  if (baseModel) return { spec: baseModel, source: `models.yaml roles.${base}.model` };
  if (config.defaults.model) return { spec: config.defaults.model, source: "models.yaml defaults.model" };
  return { spec: defaultChoice.spec, source: `default: ${defaultChoice.reason}` };
}

/** The loop's models from models.yaml and `--model`. */
export function createModels(
  options: ProviderOptions & { model?: string; roles?: string[] } = {},
): ModelRouter {
  return new ModelRouter(options);
}

function pick(o: ProviderOptions): CallSettings {
  return {
    temperature: o.temperature,
    max_output_tokens: o.max_output_tokens,
    timeout_ms: o.timeout_ms,
    repair_rounds: o.repair_rounds,
  };
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
