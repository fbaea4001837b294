/**
 * The code guard must predict the real sandbox: code it accepts runs, code it blocks as unknown or malformed
 * fails there too (so blocking it early only saves the run). Policy rules (eval, the global object, the
 * Function constructor) may block code QuickJS would run; they are listed apart and not compared.
 */
import { describe, expect, it } from "vitest";
import { InProcessToolHost, runCode, type InProcessTool } from "../../action/index.js";
import { SandboxLimits } from "../../config/index.js";
import { guardCode, guardResult, type FindingRule } from "../index.js";

const pair = {
  type: "object",
  properties: { a: { type: "number" }, b: { type: "number" } },
  required: ["a", "b"],
  additionalProperties: false,
};
const tools: InProcessTool[] = [
  { server: "math", name: "add", inputSchema: pair, handler: ({ a, b }) => (a as number) + (b as number) },
  {
    server: "math",
    name: "multiply",
    inputSchema: pair,
    handler: ({ a, b }) => (a as number) * (b as number),
  },
  ...["docs", "fs"].map((server) => ({
    server,
    name: "read_file",
    inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    handler: ({ path }: Record<string, unknown>) => `${server}:${String(path)}`,
  })),
  {
    server: "weather-api",
    name: "get-weather",
    inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    handler: ({ city }) => ({ city, temp: 21 }),
  },
  {
    server: "cfg",
    name: "configure",
    inputSchema: {
      type: "object",
      properties: { settings: { type: "object", properties: {} } },
      required: ["settings"],
    },
    handler: ({ settings }) => settings,
  },
];

const accepted = [
  "return await add(1, 2)",
  "return await add({a: 1, b: 2})",
  "return await math.multiply(6, 7)",
  "return await docs.read_file('a.txt')",
  "return await get_weather({city: 'Oslo'})",
  "return await weather_api.get_weather('Oslo')",
  "return await configure({ verbose: true })",
  "return await callTool('math.add', 2, 3)",
  "const [x, y] = await parallel([() => add(1, 1), () => multiply(2, 2)]);\nconsole.log(x);\nreturn x + y",
  "try { await add(1, 'x'); } catch (e) { if (e instanceof ToolError) return e.code; }\nreturn 'no error'",
  "return typeof nothingHere",
  "return [1, 2, 3].map((n) => n * 2).reduce((s, n) => s + n, Math.max(0, parseInt('1')))",
];

const blockedAndFailing = [
  "return await multiplication(7, 6)",
  "return await math.mul(7, 6)",
  "return await read_file('a.txt')",
  "const total = 3;\nreturn totl",
  "return await add({a: 1, c: 2})",
  "return await add(1, 2, 3)",
  "return await add(1)",
  "return await callTool('math.mult', 1, 2)",
  "return process.env.HOME",
  "return require('fs')",
  "await new Promise((r) => setTimeout(r, 1));\nreturn 1",
  "const r = await fetch('https://example.com');\nreturn r",
  "const x = ;",
  "import fs from 'fs';\nreturn 1",
];

describe("guardCode agrees with the sandbox", () => {
  const limits = SandboxLimits.parse({ timeout_ms: 5000 });

  it.each(accepted)("accepted and runs: %s", async (code) => {
    expect(guardCode(code, new InProcessToolHost(tools).tools()).ok).toBe(true);
    const result = await runCode(code, new InProcessToolHost(tools), limits);
    expect(result.error).toBeUndefined();
    expect(result.ok).toBe(true);
  });

  it.each(blockedAndFailing)("blocked and fails in the sandbox: %s", async (code) => {
    const host = new InProcessToolHost(tools);
    expect(guardCode(code, host.tools()).ok).toBe(false);
    const result = await runCode(code, host, limits);
    expect(result.ok).toBe(false);
  });
});

describe("guardResult reads the sandbox's real values", () => {
  const limits = SandboxLimits.parse({ timeout_ms: 5000 });
  const cases: Array<[string, FindingRule | null]> = [
    ["return await add(2, 3)", null],
    ["return { city: 'Oslo', temp: await multiply(3, 7) }", null],
    ["const x = await add(1, 2);", "result.empty"],
    ["return await add(1, 2) / 0 - Infinity + 0 * Infinity", "result.not_a_number"],
    ["return { avg: [1, 2].reduce((s, n) => s + n, 0) / 0 * 0 }", "result.not_a_number"],
    ["return add", "result.unexpected_type"],
    ["try { await add(1) } catch (e) { return e }", "result.error_field"],
    ["return 'Error: the file could not be read'", "result.error_text"],
  ];
  it.each(cases)("%s → %s", async (code, rule) => {
    const result = await runCode(code, new InProcessToolHost(tools), limits);
    expect(result.ok).toBe(true);
    const g = guardResult(result.value);
    expect(g.findings.map((f) => f.rule)).toEqual(rule ? [rule] : []);
    expect(g.ok).toBe(rule === null);
  });
});
