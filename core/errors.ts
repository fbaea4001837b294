/**
 * A small typed error hierarchy with string codes. Exceptions are for programmer and configuration errors
 * and for failures the caller must route on; tool failures inside a step are observations, not throws.
 */
export class PdaError extends Error {
  /** A stable machine-readable code, e.g. CONFIG_INVALID or MODEL_UNREACHABLE. */
  readonly code: string;
  /** The CLI exit code this error maps to (DESIGN.md: 2 usage/config, 3 model or server unreachable). */
  readonly exitCode: number;

  constructor(code: string, message: string, options?: { cause?: unknown; exitCode?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.exitCode = options?.exitCode ?? 1;
  }
}

/** Bad configuration or usage: names the file, line and field where it can. Exit 2. */
export class ConfigError extends PdaError {
  constructor(message: string, options?: { cause?: unknown; code?: string }) {
    super(options?.code ?? "CONFIG_INVALID", message, { cause: options?.cause, exitCode: 2 });
  }
}

/**
 * A model could not give a valid answer. Codes: MODEL_UNREACHABLE, MODEL_NO_KEY (exit 3), MODEL_RATE_LIMITED,
 * MODEL_TIMEOUT, MODEL_ABORTED, MODEL_BLOCKED, MODEL_EMPTY, MODEL_TRUNCATED, MODEL_INVALID_OUTPUT, MODEL_HTTP,
 * MODEL_CHECKSUM (a downloaded model file did not match), SCRIPT_EXHAUSTED. A bad `--model` spec is a
 * ConfigError with code MODEL_SPEC_INVALID.
 */
export class ModelError extends PdaError {
  readonly retryable: boolean;
  constructor(code: string, message: string, options?: { cause?: unknown; retryable?: boolean }) {
    const unreachable = code === "MODEL_UNREACHABLE" || code === "MODEL_NO_KEY";
    super(code, message, { cause: options?.cause, exitCode: unreachable ? 3 : 1 });
    this.retryable = options?.retryable ?? false;
  }
}

/**
 * A tool call failed. Codes: TOOL_ERROR (the server returned isError), TOOL_TIMEOUT, TOOL_CANCELLED, TOOL_INVALID_ARGS,
 * TOOL_NOT_FOUND, SERVER_UNAVAILABLE, SERVER_CRASHED, TOOL_DENIED, TOOL_LIMIT, TOOL_BAD_OUTPUT (the server's
 * answer broke its own output schema).
 */
export class ToolError extends PdaError {
  readonly tool: string;
  constructor(code: string, tool: string, message: string, options?: { cause?: unknown }) {
    super(code, message, { cause: options?.cause, exitCode: code === "SERVER_UNAVAILABLE" ? 3 : 1 });
    this.tool = tool;
  }
}

/** A budget ran out: BUDGET_STEPS, BUDGET_ATTEMPTS, BUDGET_TIME, BUDGET_LLM_CALLS, BUDGET_TOKENS, BUDGET_COST. */
export class BudgetExceeded extends PdaError {
  constructor(code: string, message: string) {
    super(code, message);
  }
}

/** The store could not be opened or written: STORE_NEWER_SCHEMA, STORE_CORRUPT, STORE_NOT_FOUND. */
export class StoreError extends PdaError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, { cause: options?.cause, exitCode: 2 });
  }
}

export function isPdaError(e: unknown): e is PdaError {
  return e instanceof PdaError;
}

/** A one-line message for any thrown value. */
export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  return typeof e === "string" ? e : JSON.stringify(e);
}
