/**
 * The shared path from raw text to a validated value, used by every provider (scripted included): call,
 * parse/repair, validate; on failure one more call that shows the model its error; then a typed ModelError.
 */
import {
  ModelError,
  modelJsonSchema,
  systemClock,
  type Clock,
  type GenerateRequest,
  type GenerateResult,
  type ModelCallOptions,
  type ModelErrorCode,
  type ModelProvider,
  type RawCompletion,
  type RawTurn,
  type TokenUsage,
} from "../core/index.js";
import { parseModelOutput, type ParseFailureKind } from "./parse.js";

/** What a provider implements: one raw turn in, text + usage out. Retries and timeouts live in here. */
export interface Transport {
  readonly provider: string;
  readonly model: string;
  complete(turn: RawTurn): Promise<RawCompletion>;
  /** Make sure the model can be used (e.g. the local model file is downloaded) before a session starts. */
  prepare?(): Promise<void>;
}

/** USD per million tokens. */
export interface ModelPrice {
  input_per_mtok: number;
  output_per_mtok: number;
}

export interface StructuredOptions {
  clock?: Clock;
  /** Extra model calls after an invalid reply (default 1: "ask once more showing the error"). */
  repair_rounds?: number;
  /** Price per model id (models.yaml costs); looked up when a result is made, the model may be learned late. */
  costs?: Record<string, ModelPrice>;
  /** Temperature, max tokens and timeout sent with every turn. */
  call?: ModelCallOptions;
}

const FAILURE_CODE: Record<ParseFailureKind, ModelErrorCode> = {
  empty: "MODEL_EMPTY",
  unparseable: "MODEL_INVALID_OUTPUT",
  truncated: "MODEL_TRUNCATED",
  invalid: "MODEL_INVALID_OUTPUT",
};

/**
 * The model answered, but not with a usable value: invalid even after the repair round, or cut off, blocked or
 * empty (a transport throws those for its one call; no repair is tried). Every such reply was paid for, so it
 * carries what the session log and the budgets need: the last raw reply, the tokens spent, their cost and the
 * calls made.
 */
export class ModelOutputError extends ModelError {
  readonly raw: string;
  readonly usage: TokenUsage;
  readonly attempts: number;
  /** Money spent on the failed calls; absent when the model has no price. */
  readonly cost_usd?: number;
  /** Why the model stopped on the last call (MAX_TOKENS, SAFETY, length, ...), when it said. */
  readonly finish_reason?: string;
  constructor(
    code: ModelErrorCode,
    message: string,
    details: { raw: string; usage: TokenUsage; attempts: number; cost_usd?: number; finish_reason?: string },
  ) {
    super(code, message);
    this.raw = details.raw;
    this.usage = details.usage;
    this.attempts = details.attempts;
    this.cost_usd = details.cost_usd;
    this.finish_reason = details.finish_reason;
  }
}

/** A ModelProvider over a transport. */
export class StructuredProvider implements ModelProvider {
  readonly provider: string;
  private readonly clock: Clock;
  private readonly repairRounds: number;
  private readonly costs: Record<string, ModelPrice>;
  private readonly call?: ModelCallOptions;

  constructor(
    readonly transport: Transport,
    options: StructuredOptions = {},
  ) {
    this.provider = transport.provider;
    this.clock = options.clock ?? systemClock;
    this.repairRounds = options.repair_rounds ?? 1;
    this.costs = options.costs ?? {};
    this.call = options.call;
  }

  /** Read through: some transports learn their model on the first call (openai without a model name). */
  get model(): string {
    return this.transport.model;
  }

  async generate<T>(request: GenerateRequest<T>): Promise<GenerateResult<T>> {
    const started = this.clock.now();
    const usage: TokenUsage = { input_tokens: 0, output_tokens: 0 };
    let retries = 0;
    let prompt = request.prompt;
    // Looked up when needed: the model may be learned on the first call.
    const cost = () => {
      const price = this.costs[this.model];
      return price ? { cost_usd: costOf(usage, price) } : {};
    };
    for (let attempt = 1; ; attempt++) {
      let reply: RawCompletion;
      try {
        reply = await this.transport.complete({
          role: request.role,
          system: request.system,
          prompt,
          // Derived when a transport reads it (cached per schema): the scripted model never does, and deriving
          // it was ~5% of a scripted run's CPU (#16).
          get jsonSchema() {
            return modelJsonSchema(request.schema);
          },
          schemaName: request.schemaName,
          ...(request.images?.length && { images: request.images }),
          signal: request.signal,
          call: this.call,
        });
      } catch (e) {
        if (!(e instanceof ModelOutputError)) throw e;
        // A reply cut off or blocked was paid for, and so were the attempts before it.
        usage.input_tokens += e.usage.input_tokens;
        usage.output_tokens += e.usage.output_tokens;
        throw new ModelOutputError(e.code, e.message, {
          raw: e.raw,
          usage,
          attempts: attempt,
          finish_reason: e.finish_reason,
          ...cost(),
        });
      }
      usage.input_tokens += reply.usage.input_tokens;
      usage.output_tokens += reply.usage.output_tokens;
      retries += reply.retries ?? 0;
      const parsed = parseModelOutput(reply.text, request.schema, request.schemaName);
      if (parsed.ok) {
        return {
          value: parsed.value,
          raw: reply.text,
          usage,
          latency_ms: this.clock.now() - started,
          attempts: attempt,
          provider: this.provider,
          model: this.model,
          retries,
          ...(reply.finish_reason !== undefined ? { finish_reason: reply.finish_reason } : {}),
          ...cost(),
        };
      }
      if (attempt > this.repairRounds) {
        throw new ModelOutputError(
          FAILURE_CODE[parsed.kind],
          `${this.provider}:${this.model} gave no valid ${request.schemaName} for ${request.role} after ` +
            `${attempt} call${attempt > 1 ? "s" : ""}: ${parsed.message}`,
          { raw: reply.text, usage, attempts: attempt, finish_reason: reply.finish_reason, ...cost() },
        );
      }
      prompt = repairPrompt(request.prompt, reply.text, parsed.message, request.schemaName);
    }
  }
}

/** The original prompt plus the rejected reply and why it was rejected. */
export function repairPrompt(original: string, reply: string, problem: string, schemaName: string): string {
  const shown = reply.length > 4000 ? `${reply.slice(0, 4000)}…` : reply;
  return (
    `${original}\n\n---\nYour previous reply was rejected.\n\nReply:\n${shown}\n\nProblem:\n${problem}\n\n` +
    `Answer again with only one JSON object that satisfies the ${schemaName} schema, nothing else.`
  );
}

export function costOf(usage: TokenUsage, price: ModelPrice): number {
  return (usage.input_tokens * price.input_per_mtok + usage.output_tokens * price.output_per_mtok) / 1e6;
}
