/**
 * Any OpenAI-compatible chat-completions server (OpenAI, Ollama, vLLM, LM Studio, llama.cpp server):
 * `response_format: json_schema` where the server supports it, `json_object` (schema in the prompt)
 * where it does not. Retries honour `retry-after-ms` / `retry-after`; a per-call timeout.
 */
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
  withRetry,
  withTimeout,
  type RetryPolicy,
} from "./retry.js";
import { ModelOutputError, type Transport } from "./structured.js";

export const DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1";

export type JsonSchemaMode = "auto" | "always" | "never";

export interface OpenAIOptions {
  /** Model id; empty → OPENAI_MODEL, else the first model the server lists at GET /models. */
  model?: string;
  baseUrl?: string;
  apiKey?: string;
  temperature?: number;
  max_output_tokens?: number;
  timeout_ms?: number;
  retry?: RetryPolicy;
  json_schema?: JsonSchemaMode;
  clock?: Clock;
  random?: () => number;
  env?: NodeJS.ProcessEnv;
}

interface ChatCompletion {
  model?: string;
  choices?: Array<{
    message?: { content?: string | null; refusal?: string | null };
    finish_reason?: string | null;
  }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number };
}

export class OpenAITransport implements Transport {
  readonly provider = "openai";
  readonly baseUrl: string;
  private modelId: string;
  private readonly apiKey?: string;
  private readonly options: OpenAIOptions;
  private readonly clock: Clock;
  /** Learned on the first call in `auto` mode: does this server take response_format json_schema? */
  private schemaSupported: boolean | undefined;

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
    this.clock = options.clock ?? systemClock;
    const mode = options.json_schema ?? "auto";
    this.schemaSupported = mode === "always" ? true : mode === "never" ? false : undefined;
  }

  get model(): string {
    return this.modelId || "auto";
  }

  async complete(turn: RawTurn): Promise<RawCompletion> {
    const timeoutMs = turn.call?.timeout_ms ?? this.options.timeout_ms ?? 60_000;
    const ctx = {
      clock: this.clock,
      policy: this.options.retry ?? DEFAULT_RETRY,
      random: this.options.random,
      signal: turn.signal,
    };
    let retries = 0;
    if (!this.modelId) {
      const listed = await withRetry(
        () => withTimeout(timeoutMs, turn.signal, (s) => this.firstModel(s), `openai ${this.baseUrl}/models`),
        ctx,
      );
      this.modelId = listed.value;
      retries += listed.retries;
    }
    const { value, retries: r } = await withRetry(
      () =>
        withTimeout(timeoutMs, turn.signal, (s) => this.once(turn, s), `openai:${this.model} (${turn.role})`),
      ctx,
    );
    return { ...value, retries: retries + r };
  }

  private async once(turn: RawTurn, signal: AbortSignal): Promise<RawCompletion> {
    if (this.schemaSupported !== false) {
      const res = await this.post(this.body(turn, true), signal);
      if (res.ok) {
        this.schemaSupported = true;
        return this.read((await res.json()) as ChatCompletion);
      }
      const text = await res.text();
      // A server without structured outputs says so with a 400/422 (or 404/501 for the feature); fall back once.
      if (this.schemaSupported === undefined && [400, 404, 415, 422, 501].includes(res.status)) {
        this.schemaSupported = false;
      } else {
        throw this.httpError(res, text);
      }
    }
    const res = await this.post(this.body(turn, false), signal);
    if (!res.ok) throw this.httpError(res, await res.text());
    return this.read((await res.json()) as ChatCompletion);
  }

  private body(turn: RawTurn, withSchema: boolean): Record<string, unknown> {
    // json_object mode needs the schema (and the word JSON) in the messages.
    const system = withSchema
      ? turn.system
      : `${turn.system}\n\nReply with one JSON object that satisfies this JSON Schema:\n${JSON.stringify(turn.jsonSchema)}`;
    const temperature = turn.call?.temperature ?? this.options.temperature;
    const maxTokens = turn.call?.max_output_tokens ?? this.options.max_output_tokens;
    return {
      model: this.modelId,
      messages: [
        { role: "system", content: system },
        { role: "user", content: turn.prompt },
      ],
      ...(temperature !== undefined ? { temperature } : {}),
      ...(maxTokens ? { max_tokens: maxTokens } : {}),
      response_format: withSchema
        ? {
            type: "json_schema",
            json_schema: { name: safeName(turn.schemaName), schema: turn.jsonSchema, strict: false },
          }
        : { type: "json_object" },
    };
  }

  private async post(body: Record<string, unknown>, signal: AbortSignal): Promise<Response> {
    try {
      return await fetch(`${this.baseUrl}/chat/completions`, {
        method: "POST",
        headers: this.headers(),
        body: JSON.stringify(body),
        signal,
      });
    } catch (e) {
      throw this.networkError(e);
    }
  }

  private headers(): Record<string, string> {
    return {
      "content-type": "application/json",
      ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}),
    };
  }

  private async firstModel(signal: AbortSignal): Promise<string> {
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}/models`, { headers: this.headers(), signal });
    } catch (e) {
      throw this.networkError(e);
    }
    if (!res.ok) throw this.httpError(res, await res.text());
    const list = (await res.json()) as { data?: Array<{ id?: string }> };
    const id = list.data?.find((m) => m.id)?.id;
    if (!id) {
      throw new ModelError(
        "MODEL_UNREACHABLE",
        `openai: ${this.baseUrl} lists no models; name one with --model openai:<model> or OPENAI_MODEL`,
      );
    }
    return id;
  }

  /** Text and usage from a reply; a cut-off, refused or empty one is a ModelOutputError carrying its usage. */
  private read(body: ChatCompletion): RawCompletion {
    const usage = {
      input_tokens: body.usage?.prompt_tokens ?? 0,
      output_tokens: body.usage?.completion_tokens ?? 0,
    };
    const choice = body.choices?.[0];
    const text = choice?.message?.content ?? "";
    const where = `openai:${this.model}`;
    const fail = (code: ModelErrorCode, message: string) =>
      new ModelOutputError(code, message, { raw: text, usage, attempts: 1 });
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
    return { text, usage };
  }

  private httpError(res: Response, text: string): ModelError {
    let message = text.slice(0, 500);
    try {
      const body = JSON.parse(text) as { error?: { message?: string } | string; message?: string };
      message =
        (typeof body.error === "string" ? body.error : body.error?.message) ?? body.message ?? message;
    } catch {
      // not JSON: keep the text
    }
    const where = `openai:${this.model} at ${this.baseUrl}: HTTP ${res.status}: ${message}`;
    if (res.status === 429 || res.status === 408 || res.status >= 500) {
      return new TransientModelError(res.status === 429 ? "MODEL_RATE_LIMITED" : "MODEL_HTTP", where, {
        retryAfterMs: retryAfter(res.headers),
      });
    }
    if (res.status === 401 || res.status === 403) {
      return new ModelError("MODEL_NO_KEY", `${where} — check OPENAI_API_KEY`);
    }
    return new ModelError("MODEL_HTTP", where);
  }

  private networkError(e: unknown): ModelError {
    return connectionError(e, `openai at ${this.baseUrl}`, "OPENAI_BASE_URL (is the server running?)");
  }
}

/** `retry-after-ms` (OpenAI) or `retry-after` in seconds or as an HTTP date. */
function retryAfter(headers: Headers): number | undefined {
  const ms = Number(headers.get("retry-after-ms"));
  if (Number.isFinite(ms) && ms > 0) return ms;
  const v = headers.get("retry-after");
  if (!v) return undefined;
  const s = Number(v);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** json_schema.name allows [a-zA-Z0-9_-]{1,64}. */
function safeName(name: string): string {
  return (name.replace(/[^a-zA-Z0-9_-]/g, "_") || "output").slice(0, 64);
}
