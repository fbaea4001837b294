/**
 * Gemini through the real @google/genai client: JSON mode with the schema as `responseJsonSchema`, our own
 * retries (the SDK's are left off so the RetryInfo delay and the injected clock apply), a per-call timeout,
 * and blocked / empty / MAX_TOKENS replies as typed errors.
 */
import type { GoogleGenAI, GenerateContentResponse } from "@google/genai";
import {
  ModelError,
  systemClock,
  type Clock,
  type ModelErrorCode,
  type RawCompletion,
  type RawTurn,
} from "../core/index.js";
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
}

export const NO_GEMINI_KEY_MESSAGE =
  "no Gemini API key: set GEMINI_API_KEY (get one at https://aistudio.google.com/apikey), or choose another " +
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
  private readonly apiKey: string;
  private readonly baseUrl?: string;
  private readonly options: GeminiOptions;
  private readonly clock: Clock;

  constructor(options: GeminiOptions = {}) {
    const env = options.env ?? process.env;
    const apiKey = options.apiKey ?? env.GEMINI_API_KEY;
    if (!apiKey) throw new ModelError("MODEL_NO_KEY", NO_GEMINI_KEY_MESSAGE);
    const baseUrl = options.baseUrl ?? (env.GEMINI_BASE_URL || undefined);
    this.model = options.model || DEFAULT_GEMINI_MODEL;
    this.options = options;
    this.clock = options.clock ?? systemClock;
    this.apiKey = apiKey;
    this.baseUrl = baseUrl;
  }

  private async client(): Promise<GoogleGenAI> {
    const { GoogleGenAI } = await loadSdk();
    // No SDK retryOptions: the SDK would retry on its own timer and hide RetryInfo from us.
    return (this.ai ??= new GoogleGenAI({
      apiKey: this.apiKey,
      ...(this.baseUrl ? { httpOptions: { baseUrl: this.baseUrl } } : {}),
    }));
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
    return { ...value, retries };
  }

  private async once(turn: RawTurn, signal: AbortSignal): Promise<RawCompletion> {
    const temperature = turn.call?.temperature ?? this.options.temperature;
    const maxTokens = turn.call?.max_output_tokens ?? this.options.max_output_tokens;
    let res: GenerateContentResponse;
    try {
      const ai = await this.client();
      res = await ai.models.generateContent({
        model: this.model,
        contents: [{ role: "user", parts: [{ text: turn.prompt }] }],
        config: {
          systemInstruction: turn.system,
          responseMimeType: "application/json",
          responseJsonSchema: turn.jsonSchema,
          ...(temperature !== undefined ? { temperature } : {}),
          ...(maxTokens ? { maxOutputTokens: maxTokens } : {}),
          abortSignal: signal,
        },
      });
    } catch (e) {
      throw mapGeminiError(e, this.model, this.baseUrl);
    }
    return readResponse(res, this.model);
  }
}

/**
 * Text and usage from a response, or the typed error for a blocked, empty or cut-off one: a ModelOutputError
 * carrying the reply's usage and text, since the tokens are billed all the same.
 */
export function readResponse(res: GenerateContentResponse, model: string): RawCompletion {
  const meta = res.usageMetadata;
  const usage = {
    input_tokens: (meta?.promptTokenCount ?? 0) + (meta?.toolUsePromptTokenCount ?? 0),
    // Thinking tokens are billed as output.
    output_tokens: (meta?.candidatesTokenCount ?? 0) + (meta?.thoughtsTokenCount ?? 0),
  };
  const cand = res.candidates?.[0];
  const text = (cand?.content?.parts ?? [])
    .filter((p) => typeof p.text === "string" && !p.thought)
    .map((p) => p.text)
    .join("");
  const fail = (code: ModelErrorCode, message: string) =>
    new ModelOutputError(code, message, { raw: text, usage, attempts: 1 });
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
  return { text, usage };
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
      return new ModelError("MODEL_NO_KEY", `${where} — check GEMINI_API_KEY`, { cause: e });
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
    const at = baseUrl ? `GEMINI_BASE_URL (${baseUrl})` : "the network connection to the Gemini API";
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
