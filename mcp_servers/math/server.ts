#!/usr/bin/env node
/**
 * The bundled calculator MCP server (the original system's math tools). Run on its own over stdio:
 * `node dist/mcp_servers/math/server.js`, or over Streamable HTTP with `--http 127.0.0.1:0`; both protocol eras
 * (2025 and 2026-07-28), stateless.
 * Each tool answers with its value as JSON text (a number or a list), so hub callers get the bare value.
 */
// zod's settings first: they apply to the schemas the imports below build as they load.
import "../../core/zod-config.js";
import { fileURLToPath } from "node:url";
import { McpServer, type CallToolResult } from "@modelcontextprotocol/server";
import { z } from "zod";
import { serveEras } from "../common/serve-eras.js";
import { lazyValidator } from "../common/validator.js";
import * as m from "./tools.js";

const num = (what: string) => z.number().describe(what);
const pair = z.object({ a: num("first operand"), b: num("second operand") });
const single = z.object({ a: num("the operand") });
const readOnly = { readOnlyHint: true, openWorldHint: false, idempotentHint: true } as const;

function answer(compute: () => unknown): CallToolResult {
  try {
    return { content: [{ type: "text", text: JSON.stringify(compute()) }] };
  } catch (e) {
    if (e instanceof m.MathInputError) return { isError: true, content: [{ type: "text", text: e.message }] };
    throw e;
  }
}

export function createMathServer(): McpServer {
  const server = new McpServer(
    { name: "pda-math", version: "0.1.0" },
    { jsonSchemaValidator: lazyValidator() },
  );
  const binary: [string, string, (a: number, b: number) => number][] = [
    ["add", "Add two numbers: a + b. Returns a number.", m.add],
    ["subtract", "Subtract b from a: a - b. Returns a number.", m.subtract],
    ["multiply", "Multiply two numbers: a * b. Returns a number.", m.multiply],
    ["divide", "Divide a by b: a / b (real division). Fails when b is 0. Returns a number.", m.divide],
    ["power", "Raise a to the power b: a ** b. Returns a number.", m.power],
    ["remainder", "Remainder of a divided by b (sign of a, like a % b). Fails when b is 0.", m.remainder],
    ["mine", "The special 'mine' operation: a - 2*b. Returns a number.", m.mine],
  ];
  for (const [name, description, fn] of binary) {
    server.registerTool(name, { description, inputSchema: pair, annotations: readOnly }, ({ a, b }) =>
      answer(() => fn(a, b)),
    );
  }
  const unary: [string, string, (a: number) => number][] = [
    ["cbrt", "Cube root of a (real; negative a gives a negative root). Returns a number.", m.cbrt],
    ["sin", "Sine of a, a in radians. Returns a number.", m.sin],
    ["cos", "Cosine of a, a in radians. Returns a number.", m.cos],
    ["tan", "Tangent of a, a in radians. Returns a number.", m.tan],
  ];
  for (const [name, description, fn] of unary) {
    server.registerTool(name, { description, inputSchema: single, annotations: readOnly }, ({ a }) =>
      answer(() => fn(a)),
    );
  }
  server.registerTool(
    "factorial",
    {
      description:
        "Factorial of a whole number a: a! (0! = 1). Fails for negative a or a > 170. Returns a number.",
      inputSchema: z.object({ a: z.number().int().describe("a whole number from 0 to 170") }),
      annotations: readOnly,
    },
    ({ a }) => answer(() => m.factorial(a)),
  );
  server.registerTool(
    "fibonacci_numbers",
    {
      description: "The first n Fibonacci numbers starting 0, 1, 1, 2, ... Returns a list of numbers.",
      inputSchema: z.object({ n: z.number().int().describe("how many numbers, 0 to 79") }),
      annotations: readOnly,
    },
    ({ n }) => answer(() => m.fibonacciNumbers(n)),
  );
  server.registerTool(
    "strings_to_chars_to_int",
    {
      description:
        "Convert each character of a string to its integer code (ASCII/Unicode value). Returns a list of integers.",
      inputSchema: z.object({ string: z.string().describe("the text to convert") }),
      annotations: readOnly,
    },
    ({ string }) => answer(() => m.stringsToCharsToInt(string)),
  );
  server.registerTool(
    "int_list_to_exponential_sum",
    {
      description: "Sum of e raised to each number of a list: sum(exp(x)). Returns a number.",
      inputSchema: z.object({ int_list: z.array(z.number()).describe("the numbers, e.g. character codes") }),
      annotations: readOnly,
    },
    ({ int_list }) => answer(() => m.intListToExponentialSum(int_list)),
  );
  return server;
}

/** What the server does when run as a program (also what its start-up snapshot runs: snapshot.ts). */
export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  await serveEras(createMathServer, argv);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void main();
