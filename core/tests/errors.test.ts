import { describe, expect, it } from "vitest";
import {
  BudgetExceeded,
  Cancelled,
  ConfigError,
  isToolErrorCode,
  ModelError,
  PdaError,
  StoreError,
  ToolError,
} from "../index.js";

describe("typed error codes (core/errors.ts)", () => {
  it("each class takes only its own codes: an unknown code does not compile", () => {
    // @ts-expect-error: not a ToolError code
    new ToolError("TOOL_MADE_UP", "t", "m");
    // @ts-expect-error: a model code is not a ToolError code
    new ToolError("MODEL_TIMEOUT", "t", "m");
    // @ts-expect-error: cancellation is its own class, not a budget
    new BudgetExceeded("ABORTED", "m");
    // @ts-expect-error: a plain PdaError takes only PdaErrorCode
    new PdaError("ANYTHING", "m");
    // @ts-expect-error: not a ConfigError code
    new ConfigError("m", { code: "STORE_CORRUPT" });
    expect(new ToolError("TOOL_ERROR", "t", "m").code).toBe("TOOL_ERROR");
  });

  it("keeps the CLI's exit codes: 2 for config and store, 3 for an unreachable model or server", () => {
    expect(new ConfigError("m").exitCode).toBe(2);
    expect(new ConfigError("m").code).toBe("CONFIG_INVALID");
    expect(new StoreError("STORE_CORRUPT", "m").exitCode).toBe(2);
    expect(new ModelError("MODEL_UNREACHABLE", "m").exitCode).toBe(3);
    expect(new ModelError("MODEL_NO_KEY", "m").exitCode).toBe(3);
    expect(new ModelError("MODEL_TIMEOUT", "m").exitCode).toBe(1);
    expect(new ToolError("SERVER_UNAVAILABLE", "t", "m").exitCode).toBe(3);
    expect(new ToolError("SERVER_CRASHED", "t", "m").exitCode).toBe(1);
    expect(new BudgetExceeded("BUDGET_STEPS", "m").exitCode).toBe(1);
  });

  it("routes with typed predicates instead of lists of strings", () => {
    expect(
      (["MODEL_INVALID_OUTPUT", "MODEL_TRUNCATED", "MODEL_EMPTY", "MODEL_TIMEOUT"] as const).map(
        (c) => new ModelError(c, "m").unusableReply,
      ),
    ).toEqual([true, true, true, false]);
    expect(
      (["SERVER_CRASHED", "SERVER_UNAVAILABLE", "TOOL_TIMEOUT"] as const).map(
        (c) => new ToolError(c, "t", "m").serverLost,
      ),
    ).toEqual([true, true, false]);
    expect([isToolErrorCode("TOOL_DENIED"), isToolErrorCode("TOOL_X"), isToolErrorCode(7)]).toEqual([
      true,
      false,
      false,
    ]);
  });

  it("cancellation is its own class, not a budget", () => {
    const e = new Cancelled("the session was cancelled");
    expect(e).toBeInstanceOf(PdaError);
    expect(e).not.toBeInstanceOf(BudgetExceeded);
    expect([e.code, e.name, e.exitCode]).toEqual(["CANCELLED", "Cancelled", 1]);
  });
});
