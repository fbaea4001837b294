/**
 * Gemini through the real @google/genai client: JSON mode with the schema as `responseJsonSchema`, our own
 * retries (the SDK's are left off so the RetryInfo delay and the injected clock apply), a per-call timeout,
 * and blocked / empty / MAX_TOKENS replies as typed errors. Temperature and thinking follow the model's family
 * entry in models.yaml (Gemini 3: temperature 1.0 and a thinking level; 2.5: a thinking budget), with the
 * thinking added to the output cap, since thinking tokens count against it. Keys and Vertex AI are read from
 * the environment as the SDK reads them; HTTPS_PROXY is honoured.
 */
import type { GoogleGenAI, GenerateContentResponse, ThinkingLevel } from "@google/genai";
import {
  ModelError,
  systemClock,
  type Clock,
  type ModelErrorCode,
  type RawCompletion,
  type RawTurn,
  type TokenUsage,
} from "../core/index.js";
import type { ModelFamily } from "./config.js";
import { httpFetch } from "./http-fetch.js";
import { proxiedFetch } from "./proxy.js";
import {
  DEFAULT_RETRY,
  TransientModelError,
  connectionError,
  parseDuration,
  withRetry,
  withTimeout,
  type RetryPolicy,
} from "./retry.js";
import { ModelOutputError, type Transport } from "./structured.js";

/** The current Flash model; an alias Google keeps pointing at the newest stable Flash. */
export const DEFAULT_GEMINI_MODEL = "gemini-flash-latest";

export interface GeminiOptions {
  model?: string;
  apiKey?: string;
  baseUrl?: string;
  temperature?: number;
  max_output_tokens?: number;
  timeout_ms?: number;
  retry?: RetryPolicy;
  clock?: Clock;
  random?: () => number;
  env?: NodeJS.ProcessEnv;
  /** The model's family entry (models.yaml families). */
  family?: ModelFamily;
}

export const NO_GEMINI_KEY_MESSAGE =
  "no Gemini API key: set GEMINI_API_KEY or GOOGLE_API_KEY (get one at https://aistudio.google.com/apikey), " +
  "or use Vertex AI (GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION), or choose another " +
  "model with --model openai:<model> (an OpenAI-compatible server at OPENAI_BASE_URL, e.g. Ollama), " +
  "--model llama:<file.gguf> (a local model) or --model scripted:<file> (recorded replies)";

/** The SDK, imported on the first call: it is large, and most commands never call Gemini. */
let sdk: typeof import("@google/genai") | undefined;
async function loadSdk(): Promise<typeof import("@google/genai")> {
  return (sdk ??= await import("@google/genai"));
}

export class GeminiTransport implements Transport {
  readonly provider = "gemini";
  readonly model: string;
  private ai?: GoogleGenAI;
  private readonly auth: GeminiAuth;
  private readonly baseUrl?: string;
  private readonly options: GeminiOptions;
  private readonly clock: Clock;
  private readonly fetch: typeof globalThis.fetch;

  constructor(options: GeminiOptions = {}) {
    const env = options.env ?? process.env;
    this.auth = geminiAuth(env, options.apiKey);
    const baseUrl = options.baseUrl ?? (env.GEMINI_BASE_URL || undefined);
    this.model = options.model || DEFAULT_GEMINI_MODEL;
    this.options = options;
    this.clock = options.clock ?? systemClock;
    this.baseUrl = baseUrl;
    this.fetch = proxiedFetch(env)?.fetch ?? httpFetch;
  }

  private async client(): Promise<GoogleGenAI> {
    const { GoogleGenAI } = await loadSdk();
    const httpOptions = { ...(this.baseUrl ? { baseUrl: this.baseUrl } : {}), fetch: this.fetch };
    // No SDK retryOptions: the SDK would retry on its own timer and hide RetryInfo from us.
    return (this.ai ??= new GoogleGenAI({ ...this.auth, httpOptions }));
  }

  async complete(turn: RawTurn): Promise<RawCompletion> {
    const timeoutMs = turn.call?.timeout_ms ?? this.options.timeout_ms ?? 60_000;
    const { value, retries } = await withRetry(
      () =>
        withTimeout(
          timeoutMs,
          turn.signal,
          (signal) => this.once(turn, signal),
          `gemini:${this.model} (${turn.role})`,
        ),
      {
        clock: this.clock,
        policy: this.options.retry ?? DEFAULT_RETRY,
        random: this.options.random,
        signal: turn.signal,
      },
    );
    return { ...value, retries: retries + (value.retries ?? 0) };
  }

  private async once(turn: RawTurn, signal: AbortSignal): Promise<RawCompletion> {
    const config = geminiConfig(turn, this.options.family, this.options);
    const first = await this.call(turn, config, signal);
    const empty = emptyCutOff(first);
    if (!empty || !config.maxOutputTokens) return readResponse(first, this.model);
    // Thinking used the whole cap and left no answer: ask once more with twice the room; both are billed.
    const again = await this.call(turn, { ...config, maxOutputTokens: config.maxOutputTokens * 2 }, signal);
    try {
      const out = readResponse(again, this.model);
      return { ...out, usage: addUsage(empty, out.usage), retries: 1 };
    } catch (e) {
      if (e instanceof ModelOutputError) {
        throw new ModelOutputError(e.code, e.message, {
          raw: e.raw,
          usage: addUsage(empty, e.usage),
          attempts: 1,
          finish_reason: e.finish_reason,
        });
      }
      throw e;
    }
  }

  private async call(turn: RawTurn, config: GeminiConfig, signal: AbortSignal) {
    try {
      const ai = await this.client();
      return await ai.models.generateContent({
        model: this.model,
        contents: [{ role: "user", parts: geminiParts(turn) }],
        config: { ...config, abortSignal: signal },
      });
    } catch (e) {
      throw mapGeminiError(e, this.model, this.baseUrl);
    }
  }
}

/** The user turn's parts: the prompt's text, then each picture inline (Gemini models all take images). */
function geminiParts(turn: RawTurn) {
  const images = (turn.images ?? []).map((i) => ({ inlineData: { mimeType: i.mimeType, data: i.data } }));
  return [{ text: turn.prompt }, ...images];
}

type GeminiConfig = {
  systemInstruction: string;
  responseMimeType: string;
  responseJsonSchema: unknown;
  temperature?: number;
  maxOutputTokens?: number;
  thinkingConfig?: { thinkingLevel?: ThinkingLevel; thinkingBudget?: number };
};

/**
 * The generation config for one turn, from the model's family entry: its temperature wins over the role's;
 * a thinking level or budget is sent, and the thinking's share is added to the cap so the answer keeps the
 * room max_output_tokens gives it. Exported so tests can check it without a server.
 */
export function geminiConfig(
  turn: RawTurn,
  family: ModelFamily | undefined,
  defaults: { temperature?: number; max_output_tokens?: number } = {},
): GeminiConfig {
  const temperature = family?.temperature ?? turn.call?.temperature ?? defaults.temperature;
  const maxTokens = turn.call?.max_output_tokens ?? defaults.max_output_tokens;
  const budget = family?.thinking_budget;
  const thinkingRoom = budget !== undefined && budget > 0 ? budget : (family?.thinking_reserve ?? 0);
  const thinkingConfig =
    family?.thinking_level !== undefined
      ? { thinkingLevel: family.thinking_level.toUpperCase() as ThinkingLevel }
      : budget !== undefined
        ? { thinkingBudget: budget }
        : undefined;
  return {
    systemInstruction: turn.system,
    responseMimeType: "application/json",
    responseJsonSchema: turn.jsonSchema,
    ...(temperature !== undefined ? { temperature } : {}),
    ...(maxTokens ? { maxOutputTokens: maxTokens + thinkingRoom } : {}),
    ...(thinkingConfig ? { thinkingConfig } : {}),
  };
}

/** The usage of a reply cut off by MAX_TOKENS before any answer text (all thinking), else undefined. */
function emptyCutOff(res: GenerateContentResponse): TokenUsage | undefined {
  const cand = res.candidates?.[0];
  if (cand?.finishReason !== "MAX_TOKENS") return undefined;
  const text = (cand.content?.parts ?? [])
    .filter((p) => !p.thought && p.text)
    .map((p) => p.text)
    .join("");
  return text.trim() ? undefined : usageOf(res);
}

function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return { input_tokens: a.input_tokens + b.input_tokens, output_tokens: a.output_tokens + b.output_tokens };
}

type GeminiAuth = { apiKey?: string; vertexai?: boolean; project?: string; location?: string };

/**
 * Credentials as @google/genai reads them, from the injected environment: GOOGLE_API_KEY, else GEMINI_API_KEY;
 * GOOGLE_GENAI_USE_VERTEXAI=true for Vertex AI, where GOOGLE_CLOUD_PROJECT/LOCATION (with Application Default
 * Credentials) win over a key from the environment, and a key alone is Vertex AI express mode.
 */
export function geminiAuth(env: NodeJS.ProcessEnv, explicitKey?: string): GeminiAuth {
  const envKey = env.GOOGLE_API_KEY || env.GEMINI_API_KEY || undefined;
  const apiKey = explicitKey ?? envKey;
  if (env.GOOGLE_GENAI_USE_VERTEXAI?.toLowerCase() === "true") {
    const project = env.GOOGLE_CLOUD_PROJECT || undefined;
    const location = env.GOOGLE_CLOUD_LOCATION || undefined;
    if (explicitKey || !project) {
      if (!apiKey) throw new ModelError("MODEL_NO_KEY", NO_GEMINI_KEY_MESSAGE);
      return { vertexai: true, apiKey };
    }
    return { vertexai: true, project, location: location ?? "global" };
  }
  if (!apiKey) throw new ModelError("MODEL_NO_KEY", NO_GEMINI_KEY_MESSAGE);
  return { apiKey };
}

/**
 * Text and usage from a response, or the typed error for a blocked, empty or cut-off one: a ModelOutputError
 * carrying the reply's usage and text, since the tokens are billed all the same.
 */
function usageOf(res: GenerateContentResponse): TokenUsage {
  const meta = res.usageMetadata;
  return {
    input_tokens: (meta?.promptTokenCount ?? 0) + (meta?.toolUsePromptTokenCount ?? 0),
    // Thinking tokens are billed as output.
    output_tokens: (meta?.candidatesTokenCount ?? 0) + (meta?.thoughtsTokenCount ?? 0),
  };
}

export function readResponse(res: GenerateContentResponse, model: string): RawCompletion {
  const usage = usageOf(res);
  const cand = res.candidates?.[0];
  const text = (cand?.content?.parts ?? [])
    .filter((p) => typeof p.text === "string" && !p.thought)
    .map((p) => p.text)
    .join("");
  const fail = (code: ModelErrorCode, message: string) =>
    new ModelOutputError(code, message, { raw: text, usage, attempts: 1, finish_reason: cand?.finishReason });
  const block = res.promptFeedback?.blockReason;
  if (block) {
    const why = res.promptFeedback?.blockReasonMessage;
    throw fail("MODEL_BLOCKED", `gemini:${model} blocked the prompt (${block}${why ? `: ${why}` : ""})`);
  }
  if (!cand) throw fail("MODEL_EMPTY", `gemini:${model} returned no candidates`);
  const finish = cand.finishReason ?? "STOP";
  if (finish === "MAX_TOKENS") {
    throw fail(
      "MODEL_TRUNCATED",
      `gemini:${model} hit its output token limit (finishReason MAX_TOKENS after ${usage.output_tokens} tokens); ` +
        `raise max_output_tokens in models.yaml`,
    );
  }
  if (["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"].includes(finish)) {
    throw fail("MODEL_BLOCKED", `gemini:${model} stopped its answer (finishReason ${finish})`);
  }
  if (!text.trim()) {
    throw fail("MODEL_EMPTY", `gemini:${model} returned an empty answer (finishReason ${finish})`);
  }
  return { text, usage, ...(cand.finishReason ? { finish_reason: cand.finishReason } : {}) };
}

/** SDK and network failures as ModelErrors; 429 and 5xx are transient, with the server's RetryInfo delay. */
export function mapGeminiError(e: unknown, model: string, baseUrl?: string): ModelError {
  if (e instanceof ModelError) return e;
  // Only the SDK throws ApiError, so it is loaded whenever there is one to recognise.
  if (sdk && e instanceof sdk.ApiError) {
    const body = parseErrorBody(e.message);
    const msg = body.message ?? e.message;
    const where = `gemini:${model}: HTTP ${e.status}${body.status ? ` ${body.status}` : ""}: ${msg}`;
    if (e.status === 429) {
      return new TransientModelError("MODEL_RATE_LIMITED", where, {
        cause: e,
        retryAfterMs: body.retryAfterMs,
      });
    }
    if (e.status === 500 || e.status === 502 || e.status === 503 || e.status === 504) {
      return new TransientModelError("MODEL_HTTP", where, { cause: e, retryAfterMs: body.retryAfterMs });
    }
    if (e.status === 401 || e.status === 403 || /API[_ ]KEY/i.test(msg)) {
      return new ModelError("MODEL_NO_KEY", `${where} — check GEMINI_API_KEY / GOOGLE_API_KEY`, { cause: e });
    }
    return new ModelError("MODEL_HTTP", where, { cause: e });
  }
  const err = e as Error & { cause?: { code?: unknown } };
  if (err?.name === "AbortError")
    return new ModelError("MODEL_ABORTED", `gemini:${model}: aborted`, { cause: e });
  // fetch itself failed (the SDK passes its TypeError through): no HTTP answer at all.
  if (
    (err instanceof TypeError && /fetch failed/i.test(err.message)) ||
    typeof err?.cause?.code === "string"
  ) {
    const at = baseUrl
      ? `GEMINI_BASE_URL (${baseUrl})`
      : "the network connection to the Gemini API (and HTTPS_PROXY, if one is needed)";
    return connectionError(e, `gemini:${model}`, at);
  }
  return new ModelError("MODEL_HTTP", `gemini:${model}: ${err?.message ?? String(e)}`, { cause: e });
}

/** The SDK puts the JSON error body in the message; pick out status, message and the RetryInfo delay. */
function parseErrorBody(text: string): { message?: string; status?: string; retryAfterMs?: number } {
  try {
    type Body = { error?: { message?: string; status?: string; details?: Array<Record<string, unknown>> } };
    const parsed = JSON.parse(text) as Body | Body[];
    // Vertex and some proxies wrap the error envelope in an array.
    const body = (Array.isArray(parsed) ? parsed[0] : parsed) ?? {};
    const retry = body.error?.details?.find((d) => String(d["@type"]).endsWith("google.rpc.RetryInfo"));
    return {
      message: body.error?.message,
      status: body.error?.status,
      retryAfterMs: parseDuration(retry?.retryDelay),
    };
  } catch {
    return {};
  }
}
