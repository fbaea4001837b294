/**
 * Any OpenAI-compatible chat-completions server (OpenAI, Ollama, vLLM, LM Studio, llama.cpp server) through the
 * official `openai` client. The request follows the model's family entry in models.yaml, chosen before the call:
 * reasoning models get `max_completion_tokens` and no sampling parameters; structured output is strict JSON
 * schema, the schema as guidance, JSON mode or the prompt only. A 400 is reported with the service's message and
 * never retried in another mode. Retries, Retry-After and timeouts are the SDK's; this file maps what it
 * finally throws onto pda's error codes.
 */
import type OpenAI from "openai";
import type {
  ChatCompletion,
  ChatCompletionContentPart,
  ChatCompletionCreateParamsNonStreaming,
} from "openai/resources/chat/completions";
import { ModelError, type ModelErrorCode, type RawCompletion, type RawTurn } from "../core/index.js";
import type { ModelFamily } from "./config.js";
import { httpFetch } from "./http-fetch.js";
import { proxiedFetch } from "./proxy.js";
import { CallWatch, sdkCallError } from "./sdk-call.js";
import { DEFAULT_RETRY, type RetryPolicy } from "./retry.js";
import { dropOptionalNulls, strictSchema } from "./strict-schema.js";
import { ModelOutputError, type Transport } from "./structured.js";

export const DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1";

export type StructuredMode = "strict" | "json_schema" | "json_object" | "prompt";

export interface OpenAIOptions {
  /** Model id; empty → OPENAI_MODEL, else the first model the server lists at GET /models. */
  model?: string;
  baseUrl?: string;
  apiKey?: string;
  temperature?: number;
  max_output_tokens?: number;
  timeout_ms?: number;
  /** max_retries and max_server_delay_ms apply; the SDK does the backoff. */
  retry?: RetryPolicy;
  /** The family entry of a model id (models.yaml families); the model may be learned on the first call. */
  familyOf?: (model: string) => ModelFamily | undefined;
  /** The mode for a model no family entry names (models.yaml openai.structured). */
  structured?: StructuredMode;
  env?: NodeJS.ProcessEnv;
}

/** The SDK, imported on the first call: most commands never call a model. */
let sdk: typeof import("openai") | undefined;

export class OpenAITransport implements Transport {
  readonly provider = "openai";
  readonly baseUrl: string;
  private modelId: string;
  private readonly apiKey?: string;
  private readonly options: OpenAIOptions;
  private readonly fetch: typeof globalThis.fetch;
  private ai?: OpenAI;

  constructor(options: OpenAIOptions = {}) {
    const env = options.env ?? process.env;
    this.baseUrl = (options.baseUrl || env.OPENAI_BASE_URL || DEFAULT_OPENAI_BASE_URL).replace(/\/+$/, "");
    this.apiKey = options.apiKey ?? (env.OPENAI_API_KEY || undefined);
    this.modelId = options.model || env.OPENAI_MODEL || "";
    if (!this.apiKey && this.baseUrl === DEFAULT_OPENAI_BASE_URL) {
      throw new ModelError(
        "MODEL_NO_KEY",
        "openai: api.openai.com needs OPENAI_API_KEY; for a local server (Ollama, vLLM, LM Studio) set " +
          "OPENAI_BASE_URL, e.g. http://127.0.0.1:11434/v1",
      );
    }
    this.options = options;
    this.fetch = proxiedFetch(env)?.fetch ?? httpFetch;
  }

  get model(): string {
    return this.modelId || "auto";
  }

  private async client(): Promise<OpenAI> {
    sdk ??= await import("openai");
    // Local servers need no key, but the SDK insists on one; it is sent only as a bearer token.
    return (this.ai ??= new sdk.OpenAI({
      apiKey: this.apiKey ?? "no-key",
      baseURL: this.baseUrl,
      maxRetries: (this.options.retry ?? DEFAULT_RETRY).max_retries,
    }));
  }

  async complete(turn: RawTurn): Promise<RawCompletion> {
    const timeout = turn.call?.timeout_ms ?? this.options.timeout_ms ?? 60_000;
    const call = new CallWatch(this.fetch, this.options.retry ?? DEFAULT_RETRY, turn.signal);
    const ai = (await this.client()).withOptions({ fetch: call.fetch });
    const opts = { signal: call.signal, timeout };
    try {
      if (!this.modelId) this.modelId = await this.firstModel(ai, opts);
      const family = this.options.familyOf?.(this.modelId);
      const mode = family?.structured ?? this.options.structured ?? "json_schema";
      const { body, strict } = buildChatRequest(turn, this.modelId, family, mode, this.options);
      const res = await ai.chat.completions.create(body, opts);
      const out = this.read(res, strict ? turn.jsonSchema : undefined);
      return { ...out, retries: call.retries };
    } catch (e) {
      throw this.mapError(e, call, timeout);
    }
  }

  private async firstModel(ai: OpenAI, opts: { signal: AbortSignal; timeout: number }): Promise<string> {
    const page = await ai.models.list(opts);
    const id = page.data.find((m) => m.id)?.id;
    if (!id) {
      throw new ModelError(
        "MODEL_UNREACHABLE",
        `openai: ${this.baseUrl} lists no models; name one with --model openai:<model> or OPENAI_MODEL`,
      );
    }
    return id;
  }

  /** Text and usage from a reply; a cut-off, refused or empty one is a ModelOutputError carrying its usage. */
  private read(body: ChatCompletion, strictOf?: Record<string, unknown>): RawCompletion {
    const usage = {
      input_tokens: body.usage?.prompt_tokens ?? 0,
      // Reasoning tokens are part of completion_tokens (and billed as output).
      output_tokens: body.usage?.completion_tokens ?? 0,
    };
    const choice = body.choices?.[0];
    let text = choice?.message?.content ?? "";
    const where = `openai:${this.model}`;
    const fail = (code: ModelErrorCode, message: string) =>
      new ModelOutputError(code, message, {
        raw: text,
        usage,
        attempts: 1,
        finish_reason: choice?.finish_reason ?? undefined,
      });
    if (!choice) throw fail("MODEL_EMPTY", `${where} returned no choices`);
    if (choice.message?.refusal) throw fail("MODEL_BLOCKED", `${where} refused: ${choice.message.refusal}`);
    if (choice.finish_reason === "length") {
      throw fail(
        "MODEL_TRUNCATED",
        `${where} hit its output token limit (finish_reason length after ${usage.output_tokens} tokens); ` +
          `raise max_output_tokens in models.yaml`,
      );
    }
    if (choice.finish_reason === "content_filter") {
      throw fail("MODEL_BLOCKED", `${where} stopped its answer (finish_reason content_filter)`);
    }
    if (!text.trim()) throw fail("MODEL_EMPTY", `${where} returned an empty answer`);
    if (strictOf) text = undoStrictNulls(text, strictOf);
    return { text, usage, ...(choice.finish_reason ? { finish_reason: choice.finish_reason } : {}) };
  }

  private mapError(e: unknown, call: CallWatch, timeoutMs: number): ModelError {
    return sdkCallError<InstanceType<typeof OpenAI.APIError>>(e, {
      provider: "openai",
      model: this.model,
      baseUrl: this.baseUrl,
      check: "OPENAI_BASE_URL (is the server running?)",
      keyVar: "OPENAI_API_KEY",
      call,
      timeoutMs,
      errors: sdk,
      said: (x) => {
        const body = x.error as { message?: string } | string | undefined;
        return `: ${(typeof body === "string" ? body : body?.message) ?? x.message}`;
      },
      hint400: (said) =>
        /response_format|json_schema|schema/i.test(said)
          ? ` — models.yaml: give this model a families entry with structured: json_object (or prompt)`
          : "",
    });
  }
}

/**
 * The chat-completions body for one turn, from the model's family entry. Exported so tests can check it
 * against the API's published rules without a server.
 */
export function buildChatRequest(
  turn: RawTurn,
  model: string,
  family: ModelFamily | undefined,
  mode: StructuredMode,
  defaults: { temperature?: number; max_output_tokens?: number } = {},
): { body: ChatCompletionCreateParamsNonStreaming; strict: boolean } {
  const strict = mode === "strict" ? strictSchema(turn.jsonSchema) : undefined;
  // A schema strict mode cannot express (a free-form record) is sent as guidance: still a JSON schema.
  const effective: StructuredMode = mode === "strict" && !strict ? "json_schema" : mode;
  const inPrompt = effective === "json_object" || effective === "prompt";
  // JSON mode needs the word JSON in the messages; the prompt-only mode has nothing else to go on.
  const system = inPrompt
    ? `${turn.system}\n\nReply with one JSON object that satisfies this JSON Schema:\n${JSON.stringify(turn.jsonSchema)}`
    : turn.system;
  const temperature = family?.temperature ?? turn.call?.temperature ?? defaults.temperature;
  const maxTokens = turn.call?.max_output_tokens ?? defaults.max_output_tokens;
  const reasoning = family?.reasoning ?? false;
  const capField = family?.max_tokens_field ?? (reasoning ? "max_completion_tokens" : "max_tokens");
  const body: ChatCompletionCreateParamsNonStreaming = {
    model,
    messages: [
      // Reasoning models take the system prompt as a developer message.
      { role: reasoning ? "developer" : "system", content: system },
      { role: "user", content: userContent(turn, family) },
    ],
    ...(!reasoning && temperature !== undefined ? { temperature } : {}),
    ...(maxTokens ? { [capField]: maxTokens } : {}),
    ...(reasoning && family?.reasoning_effort ? { reasoning_effort: family.reasoning_effort } : {}),
  };
  if (effective === "strict" || effective === "json_schema") {
    body.response_format = {
      type: "json_schema",
      json_schema: {
        name: safeName(turn.schemaName),
        schema: strict ?? turn.jsonSchema,
        strict: effective === "strict",
      },
    };
  } else if (effective === "json_object") {
    body.response_format = { type: "json_object" };
  }
  return { body, strict: effective === "strict" };
}

/**
 * The user message: the prompt, then each picture as an image_url part (a data URL) when the model's family
 * says it takes images; otherwise the prompt alone (its placeholders name the pictures) and a line saying they
 * were not sent, never their base64 as text.
 */
function userContent(turn: RawTurn, family: ModelFamily | undefined): string | ChatCompletionContentPart[] {
  const images = turn.images ?? [];
  if (images.length === 0) return turn.prompt;
  if (!family?.multimodal) {
    const what = images.length === 1 ? "1 image goes" : `${images.length} images go`;
    return `${turn.prompt}\n\n(${what} with this prompt but could not be sent: this model takes no images.)`;
  }
  return [
    { type: "text", text: turn.prompt },
    ...images.map((i): ChatCompletionContentPart => ({
      type: "image_url",
      image_url: { url: `data:${i.mimeType};base64,${i.data}` },
    })),
  ];
}

/** The reply of a strict call with the nulls of optional fields removed (left as is when not JSON). */
function undoStrictNulls(text: string, schema: Record<string, unknown>): string {
  try {
    return JSON.stringify(dropOptionalNulls(JSON.parse(text), schema));
  } catch {
    return text;
  }
}

/** json_schema.name allows [a-zA-Z0-9_-]{1,64}. */
function safeName(name: string): string {
  return (name.replace(/[^a-zA-Z0-9_-]/g, "_") || "output").slice(0, 64);
}
