/**
 * `--model <provider[:model]>` → a ModelProvider. Specs: `gemini[:model]`, `scripted:<file>`,
 * `openai:<model>`, `llama:<path | hf:repo/file>`; no spec → the default choice (see chooseDefault).
 */
import { ConfigError, ModelError, type Clock } from "../core/index.js";
import { GeminiTransport } from "./gemini.js";
import type { RetryPolicy } from "./retry.js";
import { ScriptedTransport, type Script, type ScriptedCall } from "./scripted.js";
import { StructuredProvider, type ModelPrice } from "./structured.js";
import type { ModelProvider } from "./types.js";

export interface ProviderOptions {
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  /** Overrides GEMINI_BASE_URL / OPENAI_BASE_URL. */
  baseUrl?: string;
  apiKey?: string;
  temperature?: number;
  max_output_tokens?: number;
  timeout_ms?: number;
  retry?: RetryPolicy;
  /** Extra calls after an invalid reply (default 1). */
  repair_rounds?: number;
  /** Price of the chosen model, for cost_usd on results. */
  price?: ModelPrice;
  /** Uniform [0, 1) for retry jitter; injectable for tests. */
  random?: () => number;
}

export const PROVIDER_NAMES = ["gemini", "openai", "llama", "scripted"] as const;

/** Split `provider[:model]`; the model part may itself contain colons (hf:repo/file, C:\ paths). */
export function parseModelSpec(spec: string): { provider: string; model: string } {
  const i = spec.indexOf(":");
  const provider = (i < 0 ? spec : spec.slice(0, i)).trim().toLowerCase();
  const model = i < 0 ? "" : spec.slice(i + 1).trim();
  if (!(PROVIDER_NAMES as readonly string[]).includes(provider)) {
    throw new ConfigError(
      `--model ${spec}: unknown provider "${provider}" (use gemini[:model], openai:<model>, ` +
        `llama:<file.gguf | hf:repo/file>, or scripted:<file>)`,
      { code: "MODEL_SPEC_INVALID" },
    );
  }
  return { provider, model };
}

/** A provider for a `--model` spec; throws MODEL_NO_KEY (exit 3) at creation when a key is missing. */
export function createProvider(spec: string | undefined, options: ProviderOptions = {}): ModelProvider {
  const env = options.env ?? process.env;
  if (!spec) {
    if (env.GEMINI_API_KEY) return createProvider("gemini", options);
    throw new ModelError(
      "MODEL_NO_KEY",
      "no model configured: set GEMINI_API_KEY, or OPENAI_BASE_URL for an OpenAI-compatible server, or pick " +
        "one with --model (gemini[:model], openai:<model>, llama:<file.gguf>, scripted:<file>)",
    );
  }
  const { provider, model } = parseModelSpec(spec);
  const structured = { clock: options.clock, repair_rounds: options.repair_rounds, price: options.price };
  switch (provider) {
    case "gemini":
      return new StructuredProvider(
        new GeminiTransport({
          model,
          env,
          apiKey: options.apiKey,
          baseUrl: options.baseUrl,
          temperature: options.temperature,
          max_output_tokens: options.max_output_tokens,
          timeout_ms: options.timeout_ms,
          retry: options.retry,
          clock: options.clock,
          random: options.random,
        }),
        structured,
      );
    case "scripted":
      if (!model)
        throw new ConfigError("--model scripted:<file>: the script file is missing", {
          code: "MODEL_SPEC_INVALID",
        });
      return new ScriptedProvider(ScriptedTransport.fromFile(model), structured);
    default:
      throw new ConfigError(`--model ${spec}: the ${provider} provider is not available yet`, {
        code: "MODEL_SPEC_INVALID",
      });
  }
}

/** The scripted provider, with what tests need: leftover turns and what the model was shown. */
export class ScriptedProvider extends StructuredProvider {
  constructor(
    private readonly script: ScriptedTransport,
    options: ConstructorParameters<typeof StructuredProvider>[1] = {},
  ) {
    super(script, options);
  }

  /** Build from an in-memory script (e.g. `pda replay` from a logged session). */
  static fromScript(
    script: Script,
    source = "inline",
    options: ConstructorParameters<typeof StructuredProvider>[1] = {},
  ) {
    return new ScriptedProvider(new ScriptedTransport(script, source), options);
  }

  /** Replies never played, per role ({} when all were used). */
  unconsumed(): Record<string, number> {
    return this.script.unconsumed();
  }

  /** Every turn played, in order, with the system text and prompt the model was shown. */
  get calls(): readonly ScriptedCall[] {
    return this.script.calls;
  }
}
