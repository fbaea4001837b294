/** The bundled calculator through the real hub over stdio: values, isError failures, argument checks. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolError } from "../../core/index.js";
import { MultiMCP } from "../index.js";
import { MATH_SERVER, gone } from "../hub/tests/helpers.js";

let hub: MultiMCP;
beforeAll(async () => {
  hub = await MultiMCP.start({ servers: [{ id: "math", command: process.execPath, args: [MATH_SERVER] }] });
});
afterAll(async () => {
  const pid = hub.status()[0]?.pid;
  await hub.close();
  expect(await gone([pid])).toEqual([]);
});

async function failure(name: string, args: Record<string, unknown>): Promise<ToolError> {
  const e = await hub.call(name, args).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ToolError);
  return e as ToolError;
}

describe("math server", () => {
  it("lists the original calculator's tools with descriptions and schemas", () => {
    const names = hub.tools().map((t) => t.name);
    expect(names.sort()).toEqual(
      [
        "add",
        "cbrt",
        "cos",
        "divide",
        "factorial",
        "fibonacci_numbers",
        "int_list_to_exponential_sum",
        "mine",
        "multiply",
        "power",
        "remainder",
        "sin",
        "strings_to_chars_to_int",
        "subtract",
        "tan",
      ].sort(),
    );
    for (const t of hub.tools()) {
      expect(t.description.length).toBeGreaterThan(10);
      expect(t.inputSchema.type).toBe("object");
      expect(t.qualified).toBe(`math.${t.name}`);
    }
  });

  it.each([
    ["add", { a: 32, b: 5 }, 37],
    ["subtract", { a: 37, b: 6 }, 31],
    ["multiply", { a: 3, b: 2 }, 6],
    ["divide", { a: 7, b: 2 }, 3.5],
    ["power", { a: 2, b: 10 }, 1024],
    ["remainder", { a: 17, b: 5 }, 2],
    ["cbrt", { a: -27 }, -3],
    ["factorial", { a: 5 }, 120],
    ["factorial", { a: 0 }, 1],
    ["mine", { a: 10, b: 3 }, 4],
    ["sin", { a: 0 }, 0],
    ["cos", { a: 0 }, 1],
    ["fibonacci_numbers", { n: 7 }, [0, 1, 1, 2, 3, 5, 8]],
    ["strings_to_chars_to_int", { string: "AZ" }, [65, 90]],
  ])("%s(%j) = %j", async (name, args, expected) => {
    expect(await hub.call(name, args)).toEqual(expected);
  });

  it("computes trigonometry in radians and exponential sums", async () => {
    expect(await hub.call("tan", { a: Math.PI / 4 })).toBeCloseTo(1, 12);
    expect(await hub.call("int_list_to_exponential_sum", { int_list: [0, 1] })).toBeCloseTo(1 + Math.E, 12);
  });

  it.each([
    ["divide", { a: 1, b: 0 }, /division by zero/],
    ["remainder", { a: 1, b: 0 }, /by zero/],
    ["factorial", { a: -3 }, /negative/],
    ["factorial", { a: 171 }, /overflows/],
    ["fibonacci_numbers", { n: 500 }, /at most 79/],
  ])("%s(%j) is an isError result, not a crash", async (name, args, message) => {
    const e = await failure(name, args);
    expect(e.code).toBe("TOOL_ERROR");
    expect(e.tool).toBe(`math.${name}`);
    expect(e.message).toMatch(message);
    expect(hub.status()[0]!.state).toBe("ready");
  });

  it("rejects bad arguments before sending, naming the field", async () => {
    const e = await failure("math.add", { a: "one", b: 2 });
    expect(e.code).toBe("TOOL_INVALID_ARGS");
    expect(e.message).toMatch(/"a" must be number/);
    const missing = await failure("factorial", {});
    expect(missing.message).toMatch(/missing required argument "a"/);
    const notInt = await failure("factorial", { a: 2.5 });
    expect(notInt.message).toMatch(/"a" must be integer/);
  });
});
