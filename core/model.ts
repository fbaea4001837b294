/**
 * The model edge: what the loop asks of a model, and what it gets back. Providers (llm/) implement it; the loop,
 * the phases and the batch runner depend only on this.
 */
import type { z } from "zod";

/** Tokens one model call used (the session's running totals are `Usage` in schemas.ts). */
export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
}

/** A picture for the model (MCP's image content shape): base64 data and its MIME type, e.g. image/png. */
export interface ImagePart {
  mimeType: string;
  /** Base64, without a data: prefix. */
  data: string;
}

export interface GenerateRequest<T> {
  /** Which part of the loop asks: "perception", "decision", "judge", ... (scripted playback is per role). */
  role: string;
  system: string;
  prompt: string;
  /** The zod schema the value must satisfy; the provider derives the JSON Schema from it. */
  schema: z.ZodType<T>;
  /** A short name for the schema, e.g. "PerceptionSnapshot". */
  schemaName: string;
  /**
   * Pictures that go with the prompt (a tool's image result). Multimodal transports send them as image parts
   * after the prompt's text; others leave them out, the prompt holding a short placeholder for each.
   */
  images?: ImagePart[];
  signal?: AbortSignal;
}

export interface GenerateResult<T> {
  value: T;
  /** The raw text of the last response. */
  raw: string;
  usage: TokenUsage;
  latency_ms: number;
  /** Model calls made, including the repair round. */
  attempts: number;
  provider: string;
  model: string;
  /** Transport retries (429/5xx/timeouts) spent across all attempts. */
  retries?: number;
  /** Money spent, from the provider's cost table; absent when the model has no price. */
  cost_usd?: number;
  /** Why the model stopped on the last call, verbatim from its provider (RawCompletion). */
  finish_reason?: string;
}

/** One model behind one interface: schema in, validated value + usage + latency out. */
export interface ModelProvider {
  readonly provider: string;
  readonly model: string;
  /** Throws ModelError (core/errors) when no valid value can be had. */
  generate<T>(request: GenerateRequest<T>): Promise<GenerateResult<T>>;
}

/** One raw model turn: what a provider's transport is asked, and what it returns (text, not yet parsed). */
export interface RawTurn {
  role: string;
  system: string;
  prompt: string;
  /** The JSON Schema derived from the request's zod schema. */
  jsonSchema: Record<string, unknown>;
  schemaName: string;
  /** The request's pictures (GenerateRequest.images), for transports that send images. */
  images?: ImagePart[];
  signal?: AbortSignal;
  /** Per-role call settings (models.yaml); a transport falls back to its own defaults. */
  call?: ModelCallOptions;
}

/** Per-role call settings (models.yaml), as a transport applies them. */
export interface ModelCallOptions {
  temperature?: number;
  max_output_tokens?: number;
  timeout_ms?: number;
}

export interface RawCompletion {
  text: string;
  usage: TokenUsage;
  /** Transport retries this turn needed. */
  retries?: number;
  /**
   * Why the model stopped, verbatim from the provider: Gemini's finishReason (STOP, MAX_TOKENS, SAFETY, ...),
   * an OpenAI-compatible choice's finish_reason (stop, length, content_filter, tool_calls, ...), node-llama-cpp's
   * stopReason (eogToken, maxTokens, ...), "stop" for scripted playback. The GenAI conventions'
   * gen_ai.response.finish_reasons carries it as is.
   */
  finish_reason?: string;
}

/**
 * One model call made on a phase's behalf, within the session's budgets, counted and logged (the loop provides
 * it, agent/kernel/model-call.ts). `model` defaults to the model of the phase's role. Resolves to the valid value.
 */
export type ModelCall = <T>(request: GenerateRequest<T>, model?: ModelProvider) => Promise<T>;

/**
 * A model phase (perception, decision, a planner then a coder): the loop's input → its output. A phase builds
 * each request from plain data (role, schema, prompt) and asks through `call`, never a provider directly.
 */
export type Phase<I, O> = (input: I, call: ModelCall) => Promise<O>;
