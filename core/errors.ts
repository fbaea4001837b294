/**
 * A small typed error hierarchy with string codes. Exceptions are for programmer and configuration errors
 * and for failures the caller must route on; tool failures inside a step are observations, not throws.
 *
 * Each class has its own union of codes, so building an error with a code its class does not know fails to
 * compile, and a caller routes with a typed `e.code === "…"` (or a predicate below) instead of lists of
 * strings. Codes that arrive as data (a sandbox's thrown value, a server's answer) are checked with the
 * `is…Code` guards before they become a code.
 */

/** Codes of a ConfigError (exit 2). */
export const CONFIG_ERROR_CODES = [
  "CONFIG_INVALID",
  "MODEL_SPEC_INVALID",
  "BATCH_INPUT",
  "BATCH_RESUME",
  "BATCH_EXISTS",
  "BATCH_STATE",
] as const;
export type ConfigErrorCode = (typeof CONFIG_ERROR_CODES)[number];

/** Codes of a ModelError; MODEL_UNREACHABLE and MODEL_NO_KEY exit 3. */
export const MODEL_ERROR_CODES = [
  "MODEL_UNREACHABLE",
  "MODEL_NO_KEY",
  "MODEL_RATE_LIMITED",
  "MODEL_TIMEOUT",
  "MODEL_ABORTED",
  "MODEL_BLOCKED",
  "MODEL_EMPTY",
  "MODEL_TRUNCATED",
  "MODEL_INVALID_OUTPUT",
  "MODEL_HTTP",
  "MODEL_CHECKSUM",
  "MODEL_SPEC_INVALID",
  "SCRIPT_EXHAUSTED",
] as const;
export type ModelErrorCode = (typeof MODEL_ERROR_CODES)[number];

/** Codes of a ToolError; SERVER_UNAVAILABLE exits 3. */
export const TOOL_ERROR_CODES = [
  "TOOL_ERROR",
  "TOOL_TIMEOUT",
  "TOOL_CANCELLED",
  "TOOL_INVALID_ARGS",
  "TOOL_NOT_FOUND",
  "TOOL_DENIED",
  "TOOL_LIMIT",
  "TOOL_NOT_ALLOWED",
  "TOOL_ANSWER_TOO_LARGE",
  "TOOL_RESULT_TOO_LARGE",
  // The server's answer broke its own output schema (the server's fault, not the caller's).
  "TOOL_BAD_OUTPUT",
  // Durable steps: a call sent before a crash with no outcome, and a resumed step that took another path.
  "IN_DOUBT",
  "REPLAY_MISMATCH",
  "SERVER_UNAVAILABLE",
  "SERVER_CRASHED",
  "AGENT_NOT_FOUND",
  "AGENT_TIMEOUT",
  "HANDOFF_ALREADY",
  "REPORT_INVALID",
  "REPORT_ALREADY_FILED",
] as const;
export type ToolErrorCode = (typeof TOOL_ERROR_CODES)[number];

/** Codes of a BudgetExceeded. */
export const BUDGET_CODES = [
  "BUDGET_STEPS",
  "BUDGET_ATTEMPTS",
  "BUDGET_TIME",
  "BUDGET_LLM_CALLS",
  "BUDGET_TOKENS",
  "BUDGET_COST",
] as const;
export type BudgetCode = (typeof BUDGET_CODES)[number];

/** Codes of a StoreError (exit 2). */
export const STORE_ERROR_CODES = [
  "STORE_NEWER_SCHEMA",
  "STORE_CORRUPT",
  "STORE_NOT_FOUND",
  "STORE_OPEN_FAILED",
  "STORE_WRITE_FAILED",
  "STORE_MIGRATION_FAILED",
  "STORE_UNKNOWN_SESSION",
  "STORE_NOT_INTERRUPTED",
  "STORE_AMBIGUOUS_ID",
  "STORE_BAD_CURSOR",
  "STORE_NOT_WAITING",
] as const;
export type StoreErrorCode = (typeof STORE_ERROR_CODES)[number];

/** Batch runs: writing the output folder, a run that failed, the job queue (Redis) that cannot be reached. */
export type PdaErrorCode = "BATCH_WRITE" | "BATCH_FAILED" | "QUEUE_UNREACHABLE";

const member =
  <C extends string>(codes: readonly C[]) =>
  (x: unknown): x is C =>
    typeof x === "string" && (codes as readonly string[]).includes(x);

/** Whether a string that arrived as data is one of ToolError's codes. */
export const isToolErrorCode = member(TOOL_ERROR_CODES);

/**
 * The base of every typed error. A subclass names its code union (`extends PdaError<ToolErrorCode>`); a plain
 * `new PdaError(code, …)` takes only a PdaErrorCode (NoInfer keeps the code from widening the union).
 */
export class PdaError<C extends string = PdaErrorCode> extends Error {
  /** A stable machine-readable code, e.g. CONFIG_INVALID or MODEL_UNREACHABLE. */
  readonly code: C;
  /** The CLI exit code this error maps to (DESIGN.md: 2 usage/config, 3 model or server unreachable). */
  readonly exitCode: number;

  constructor(code: NoInfer<C>, message: string, options?: { cause?: unknown; exitCode?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.exitCode = options?.exitCode ?? 1;
  }
}

/** Bad configuration or usage: names the file, line and field where it can. Exit 2. */
export class ConfigError extends PdaError<ConfigErrorCode> {
  constructor(message: string, options?: { cause?: unknown; code?: ConfigErrorCode }) {
    super(options?.code ?? "CONFIG_INVALID", message, { cause: options?.cause, exitCode: 2 });
  }
}

/**
 * A model could not give a valid answer. MODEL_CHECKSUM: a downloaded model file did not match;
 * SCRIPT_EXHAUSTED: a scripted model was called past its script. A bad `--model` spec is a ConfigError
 * with code MODEL_SPEC_INVALID (a bad hf: model file spec is a ModelError with that code).
 */
export class ModelError extends PdaError<ModelErrorCode> {
  readonly retryable: boolean;
  constructor(code: ModelErrorCode, message: string, options?: { cause?: unknown; retryable?: boolean }) {
    const unreachable = code === "MODEL_UNREACHABLE" || code === "MODEL_NO_KEY";
    super(code, message, { cause: options?.cause, exitCode: unreachable ? 3 : 1 });
    this.retryable = options?.retryable ?? false;
  }

  /** A reply the provider could not turn into a valid value, even after its repair round. */
  get unusableReply(): boolean {
    return (
      this.code === "MODEL_INVALID_OUTPUT" || this.code === "MODEL_TRUNCATED" || this.code === "MODEL_EMPTY"
    );
  }
}

/** A tool call failed; TOOL_ERROR is the server's isError answer. */
export class ToolError extends PdaError<ToolErrorCode> {
  readonly tool: string;
  constructor(code: ToolErrorCode, tool: string, message: string, options?: { cause?: unknown }) {
    super(code, message, { cause: options?.cause, exitCode: code === "SERVER_UNAVAILABLE" ? 3 : 1 });
    this.tool = tool;
  }

  /** The server is gone (down or crashed), not just this call. */
  get serverLost(): boolean {
    return this.code === "SERVER_UNAVAILABLE" || this.code === "SERVER_CRASHED";
  }
}

/** A budget ran out. */
export class BudgetExceeded extends PdaError<BudgetCode> {
  constructor(code: BudgetCode, message: string) {
    super(code, message);
  }
}

/** The session was cancelled (Ctrl-C or the caller's abort signal): not a budget, and not a failure. */
export class Cancelled extends PdaError<"CANCELLED"> {
  constructor(message: string, options?: { cause?: unknown }) {
    super("CANCELLED", message, { cause: options?.cause });
  }
}

/** The store could not be opened or written. */
export class StoreError extends PdaError<StoreErrorCode> {
  constructor(code: StoreErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, { cause: options?.cause, exitCode: 2 });
  }
}

export function isPdaError(e: unknown): e is PdaError<string> {
  return e instanceof PdaError;
}

/** A one-line message for any thrown value. */
export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  return typeof e === "string" ? e : JSON.stringify(e);
}
