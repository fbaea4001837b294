/**
 * Claude through the official `@anthropic-ai/sdk` (Messages API). The request follows the model's family entry
 * in models.yaml, chosen before the call: structured outputs (`output_config.format`, the schema made
 * strict-compatible by the SDK's own transform) where the model has them, else one tool forced with
 * `tool_choice`, or the schema in the prompt; adaptive thinking with an effort level, or a thinking budget,
 * with the thinking's share added to `max_tokens` (thinking counts against it). No sampling parameters are
 * sent: current Claude models reject them and this SDK no longer types them. Retries (429, 529, 5xx),
 * Retry-After and timeouts are the SDK's; a 400 is reported with the service's message.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type {
  ContentBlockParam,
  Message,
  MessageCreateParamsNonStreaming,
  Tool,
} from "@anthropic-ai/sdk/resources/messages/messages";
import {
  ModelError,
  type ModelErrorCode,
  type RawCompletion,
  type RawTurn,
  type TokenUsage,
} from "../core/index.js";
import type { ModelFamily } from "./config.js";
import { httpFetch } from "./http-fetch.js";
import { proxiedFetch } from "./proxy.js";
import { DEFAULT_RETRY, type RetryPolicy } from "./retry.js";
import { CallWatch, sdkCallError } from "./sdk-call.js";
import { strictSchema } from "./strict-schema.js";
import { ModelOutputError, type Transport } from "./structured.js";

export const DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com";
/** The model `--model anthropic` uses when ANTHROPIC_MODEL does not name one. */
export const DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-5-5";
/** max_tokens is required by the API; used when models.yaml gives no cap. */
const DEFAULT_MAX_TOKENS = 4096;

export type AnthropicOutput = "json_schema" | "tool" | "prompt";

export interface AnthropicOptions {
  /** Model id; empty → ANTHROPIC_MODEL, else DEFAULT_ANTHROPIC_MODEL. */
  model?: string;
  /** Overrides ANTHROPIC_BASE_URL (a proxy or gateway speaking the Messages API). */
  baseUrl?: string;
  apiKey?: string;
  max_output_tokens?: number;
  timeout_ms?: number;
  /** max_retries and max_server_delay_ms apply; the SDK does the backoff. */
  retry?: RetryPolicy;
  /** The model's family entry (models.yaml families). */
  family?: ModelFamily;
  env?: NodeJS.ProcessEnv;
}

export const NO_ANTHROPIC_KEY_MESSAGE =
  "anthropic: api.anthropic.com needs ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN for a bearer token); " +
  "for a gateway speaking the Messages API set ANTHROPIC_BASE_URL";

/** The SDK, imported on the first call: most commands never call a model. */
let sdk: typeof import("@anthropic-ai/sdk") | undefined;
/** The SDK's rewrite of a schema into what structured outputs accept; loaded with the SDK for the same reason. */
let transform: typeof import("@anthropic-ai/sdk/lib/transform-json-schema").transformJSONSchema | undefined;

export class AnthropicTransport implements Transport {
  readonly provider = "anthropic";
  readonly model: string;
  readonly baseUrl: string;
  private readonly credential: { apiKey: string } | { authToken: string };
  private readonly options: AnthropicOptions;
  private readonly fetch: typeof globalThis.fetch;
  private ai?: Anthropic;

  constructor(options: AnthropicOptions = {}) {
    const env = options.env ?? process.env;
    this.baseUrl = (options.baseUrl || env.ANTHROPIC_BASE_URL || DEFAULT_ANTHROPIC_BASE_URL).replace(
      /\/+$/,
      "",
    );
    this.model = options.model || env.ANTHROPIC_MODEL || DEFAULT_ANTHROPIC_MODEL;
    const apiKey = options.apiKey ?? (env.ANTHROPIC_API_KEY || undefined);
    const authToken = env.ANTHROPIC_AUTH_TOKEN || undefined;
    if (!apiKey && !authToken && this.baseUrl === DEFAULT_ANTHROPIC_BASE_URL) {
      throw new ModelError("MODEL_NO_KEY", NO_ANTHROPIC_KEY_MESSAGE);
    }
    // A gateway may need no key, but the SDK insists on a credential; it only goes to the base URL.
    this.credential = apiKey ? { apiKey } : authToken ? { authToken } : { apiKey: "no-key" };
    this.options = options;
    this.fetch = proxiedFetch(env)?.fetch ?? httpFetch;
  }

  private async client(): Promise<Anthropic> {
    sdk ??= await import("@anthropic-ai/sdk");
    // Everything the SDK would read from process.env is given, so the injected environment is the only one.
    return (this.ai ??= new sdk.Anthropic({
      ...this.credential,
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
      const { body, toolName } = await buildMessagesRequest(
        turn,
        this.model,
        this.options.family,
        this.options,
      );
      const first = await ai.messages.create(body, opts);
      const empty = emptyCutOff(first, toolName);
      if (!empty) return { ...readMessage(first, this.model, toolName), retries: call.retries };
      // Thinking used the whole cap and left no answer: ask once more with twice the room; both are billed.
      const again = await ai.messages.create({ ...body, max_tokens: body.max_tokens * 2 }, opts);
      try {
        const out = readMessage(again, this.model, toolName);
        return { ...out, usage: addUsage(empty, out.usage), retries: call.retries };
      } catch (e) {
        if (!(e instanceof ModelOutputError)) throw e;
        throw new ModelOutputError(e.code, e.message, {
          raw: e.raw,
          usage: addUsage(empty, e.usage),
          attempts: 1,
        });
      }
    } catch (e) {
      throw this.mapError(e, call, timeout);
    }
  }

  private mapError(e: unknown, call: CallWatch, timeoutMs: number): ModelError {
    return sdkCallError<InstanceType<typeof Anthropic.APIError>>(e, {
      provider: "anthropic",
      model: this.model,
      baseUrl: this.baseUrl,
      check: "ANTHROPIC_BASE_URL and the network (and HTTPS_PROXY, if one is needed)",
      keyVar: "ANTHROPIC_API_KEY",
      call,
      timeoutMs,
      errors: sdk,
      said: (x) => `${x.type ? ` ${x.type}` : ""}: ${x.apiMessage ?? x.message}`,
      hint400: (said) =>
        /output_config|thinking|tool_choice|schema|temperature/i.test(said)
          ? ` — models.yaml: give ${this.model} a families entry (provider: anthropic) that fits it`
          : "",
    });
  }
}

/**
 * The Messages API body for one turn, from the model's family entry, and the name of the forced tool when the
 * answer comes as a tool call. Exported so tests can check it against the API's published rules without a server.
 */
export async function buildMessagesRequest(
  turn: RawTurn,
  model: string,
  family: ModelFamily | undefined,
  defaults: { max_output_tokens?: number } = {},
): Promise<{ body: MessageCreateParamsNonStreaming; mode: AnthropicOutput; toolName?: string }> {
  const thinks = family?.effort !== undefined || family?.thinking_budget !== undefined;
  let mode: AnthropicOutput = family?.anthropic_output ?? "tool";
  // A free-form record has no strict form: it goes in a tool's input_schema (which takes any schema), or in
  // the prompt when thinking rules out forcing a tool.
  if (mode === "json_schema" && !strictSchema(turn.jsonSchema)) mode = thinks ? "prompt" : "tool";
  const thinking = mode === "tool" ? undefined : thinkingOf(family);
  const cap = turn.call?.max_output_tokens ?? defaults.max_output_tokens ?? DEFAULT_MAX_TOKENS;
  const room =
    thinking?.type === "enabled" ? thinking.budget_tokens : thinking ? (family?.thinking_reserve ?? 0) : 0;
  const system =
    mode === "prompt"
      ? `${turn.system}\n\nReply with only one JSON object that satisfies this JSON Schema:\n${JSON.stringify(turn.jsonSchema)}`
      : turn.system;
  const body: MessageCreateParamsNonStreaming = {
    model,
    max_tokens: cap + room,
    system,
    messages: [{ role: "user", content: userContent(turn) }],
    ...(thinking ? { thinking } : {}),
  };
  const effort = thinking?.type === "adaptive" ? family?.effort : undefined;
  if (mode === "json_schema") {
    body.output_config = {
      format: { type: "json_schema", schema: await strictForClaude(turn.jsonSchema) },
      ...(effort ? { effort } : {}),
    };
  } else if (effort) {
    body.output_config = { effort };
  }
  if (mode !== "tool") return { body, mode };
  const toolName = toolNameOf(turn.schemaName);
  const tool: Tool = {
    name: toolName,
    description: `Give your answer as the ${turn.schemaName} object, the only way to reply.`,
    input_schema: turn.jsonSchema as Tool["input_schema"],
  };
  body.tools = [tool];
  body.tool_choice = { type: "tool", name: toolName, disable_parallel_tool_use: true };
  return { body, mode, toolName };
}

/** The picture types the Messages API takes as base64 image blocks. */
const CLAUDE_IMAGE_TYPES = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"]);

/**
 * The user message: the prompt, then each picture as a base64 image block (every current Claude model takes
 * images). A picture of a type the API refuses is left out, with a line saying so; its placeholder in the
 * prompt still names it, and its base64 never goes as text.
 */
function userContent(turn: RawTurn): string | ContentBlockParam[] {
  const images = turn.images ?? [];
  if (images.length === 0) return turn.prompt;
  const sent = images.filter((i) => CLAUDE_IMAGE_TYPES.has(i.mimeType));
  const left = images.filter((i) => !CLAUDE_IMAGE_TYPES.has(i.mimeType));
  const note = left.length
    ? `\n\n(${left.length === 1 ? "1 image goes" : `${left.length} images go`} with this prompt but could not be sent: ${[...new Set(left.map((i) => i.mimeType))].join(", ")} is not a type this model takes.)`
    : "";
  if (sent.length === 0) return turn.prompt + note;
  return [
    { type: "text", text: turn.prompt + note },
    ...sent.map((i): ContentBlockParam => ({
      type: "image",
      source: { type: "base64", media_type: i.mimeType as "image/png", data: i.data },
    })),
  ];
}

function thinkingOf(family: ModelFamily | undefined): MessageCreateParamsNonStreaming["thinking"] {
  if (family?.effort !== undefined) return { type: "adaptive" };
  if (family?.thinking_budget !== undefined && family.thinking_budget > 0) {
    return { type: "enabled", budget_tokens: family.thinking_budget };
  }
  return undefined;
}

async function strictForClaude(schema: Record<string, unknown>): Promise<Record<string, unknown>> {
  transform ??= (await import("@anthropic-ai/sdk/lib/transform-json-schema")).transformJSONSchema;
  return transform(schema);
}

/** Tool names allow [a-zA-Z0-9_-]{1,64}. */
function toolNameOf(schemaName: string): string {
  return (schemaName.replace(/[^a-zA-Z0-9_-]/g, "_") || "answer").slice(0, 64);
}

function usageOf(msg: Message): TokenUsage {
  const u = msg.usage;
  return {
    // Cache reads and writes are input too (pda sets no cache breakpoints, so they are normally zero).
    input_tokens:
      (u?.input_tokens ?? 0) + (u?.cache_creation_input_tokens ?? 0) + (u?.cache_read_input_tokens ?? 0),
    // Thinking tokens are part of output_tokens, and billed as output.
    output_tokens: u?.output_tokens ?? 0,
  };
}

function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return { input_tokens: a.input_tokens + b.input_tokens, output_tokens: a.output_tokens + b.output_tokens };
}

/** The answer of a reply: the forced tool's input as JSON, else the text blocks (thinking blocks left out). */
function answerOf(msg: Message, toolName?: string): string {
  if (toolName) {
    const use = msg.content.find((b) => b.type === "tool_use" && b.name === toolName);
    if (use?.type === "tool_use") return JSON.stringify(use.input);
  }
  return msg.content
    .map((b) => (b.type === "text" ? b.text : ""))
    .join("")
    .trim();
}

/** The usage of a reply cut off by max_tokens before any answer (all thinking), else undefined. */
function emptyCutOff(msg: Message, toolName?: string): TokenUsage | undefined {
  if (msg.stop_reason !== "max_tokens") return undefined;
  return answerOf(msg, toolName) ? undefined : usageOf(msg);
}

/** Text and usage from a reply; a cut-off, refused or empty one is a ModelOutputError carrying its usage. */
export function readMessage(msg: Message, model: string, toolName?: string): RawCompletion {
  const usage = usageOf(msg);
  const text = answerOf(msg, toolName);
  const where = `anthropic:${model}`;
  const fail = (code: ModelErrorCode, message: string) =>
    new ModelOutputError(code, message, { raw: text, usage, attempts: 1 });
  if (msg.stop_reason === "refusal")
    throw fail("MODEL_BLOCKED", `${where} declined to answer (stop_reason refusal)`);
  if (msg.stop_reason === "max_tokens" || msg.stop_reason === "model_context_window_exceeded") {
    throw fail(
      "MODEL_TRUNCATED",
      `${where} hit its output token limit (stop_reason ${msg.stop_reason} after ${usage.output_tokens} tokens); ` +
        `raise max_output_tokens in models.yaml`,
    );
  }
  if (!text) throw fail("MODEL_EMPTY", `${where} returned an empty answer (stop_reason ${msg.stop_reason})`);
  return { text, usage };
}
