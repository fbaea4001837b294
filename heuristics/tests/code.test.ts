import { describe, expect, it } from "vitest";
import type { ToolInfo } from "../../core/index.js";
import { Finding, findToolCalls, findingsToStepError, guardCode, type FindingRule } from "../index.js";

function tool(
  server: string,
  name: string,
  props: Record<string, string>,
  required: string[],
  extra = {},
): ToolInfo {
  return {
    server,
    name,
    qualified: `${server}.${name}`,
    unique: true,
    description: `${name} tool`,
    inputSchema: {
      type: "object",
      properties: Object.fromEntries(Object.entries(props).map(([k, type]) => [k, { type }])),
      required,
      additionalProperties: false,
      ...extra,
    },
  };
}

const TOOLS: ToolInfo[] = [
  tool("math", "add", { a: "number", b: "number" }, ["a", "b"]),
  tool("math", "multiply", { a: "number", b: "number" }, ["a", "b"]),
  tool("math", "factorial", { n: "integer" }, ["n"]),
  tool("web", "fetch_url_as_markdown", { url: "string", max_chars: "integer" }, ["url"]),
  tool("kg", "create_entities", { entities: "array" }, ["entities"]),
  tool("cfg", "configure", { settings: "object" }, ["settings"]),
  tool("cfg", "ping", {}, []),
  tool("open", "loose", { q: "string" }, ["q"], { additionalProperties: true }),
  // read_file exists on two servers: callable only as docs.read_file / fs.read_file
  { ...tool("docs", "read_file", { path: "string" }, ["path"]), unique: false },
  { ...tool("fs", "read_file", { path: "string" }, ["path"]), unique: false },
];

type Case = { name: string; code: string; expect: Array<[FindingRule, "info" | "warn" | "block"]> };

const ok: Case[] = [
  { name: "plain named call", code: "return await add({a: 1, b: 2})", expect: [] },
  { name: "positional call", code: "return await multiply(7, 6)", expect: [] },
  { name: "qualified call", code: "return await math.add(1, 2)", expect: [] },
  {
    name: "qualified call of a non-unique name",
    code: "return await docs.read_file({path: 'a.txt'})",
    expect: [],
  },
  { name: "computed static member", code: "return await math['factorial'](5)", expect: [] },
  {
    name: "optional arg omitted",
    code: "return await fetch_url_as_markdown({url: 'https://x.org'})",
    expect: [],
  },
  {
    name: "helpers, builtins, locals, closures",
    code: `
      const nums = [1, 2, 3];
      function twice(x) { return x * 2; }
      const [a, b] = await parallel([() => add(1, 2), () => multiply(3, 4)]);
      console.log(JSON.stringify({ a, b }), Math.max(...nums));
      try { await factorial(-1); } catch (e) { if (e instanceof ToolError) console.log(e.code); }
      label: for (const n of nums) { if (n > 1) break label; }
      return twice(a) + b + nums.map((n) => n + 1).length;`,
    expect: [],
  },
  {
    name: "hoisted function used before declaration",
    code: "return helper(2);\nfunction helper(x) { return x; }",
    expect: [],
  },
  { name: "typeof of an unknown name", code: "return typeof maybeThere === 'undefined'", expect: [] },
  {
    name: "a local that shadows a forbidden name",
    code: "const fetch = fetch_url_as_markdown;\nreturn await fetch({url: 'https://x.org'})",
    expect: [],
  },
  {
    name: "one object param called positionally",
    code: "return await configure({ verbose: true })",
    expect: [],
  },
  {
    name: "one array param called positionally",
    code: "return await create_entities([{ name: 'x' }])",
    expect: [],
  },
  {
    name: "spread arguments are not counted",
    code: "const args = [1, 2];\nreturn await add(...args)",
    expect: [],
  },
  {
    name: "object with spread may supply required keys",
    code: "const base = {a: 1};\nreturn await add({...base, b: 2})",
    expect: [],
  },
  {
    name: "method calls on values",
    code: "const s = 'a,b';\nreturn s.split(',').map((x) => x.trim()).join(';')",
    expect: [],
  },
];

const bad: Case[] = [
  { name: "syntax error", code: "const x = ;\nreturn x", expect: [["code.parse_error", "block"]] },
  { name: "markdown fence", code: "```js\nreturn 1\n```", expect: [["code.parse_error", "block"]] },
  {
    name: "import statement",
    code: "import fs from 'fs';\nreturn 1",
    expect: [["code.parse_error", "block"]],
  },
  {
    name: "unknown tool",
    code: "return await multiplication(7, 6)",
    expect: [["code.unknown_tool", "block"]],
  },
  {
    name: "unknown tool on a known server",
    code: "return await math.mul(7, 6)",
    expect: [["code.unknown_tool", "block"]],
  },
  {
    name: "ambiguous plain name",
    code: "return await read_file({path: 'a'})",
    expect: [["code.ambiguous_tool", "block"]],
  },
  {
    name: "undefined variable",
    code: "const total = 3;\nreturn totl",
    expect: [["code.undefined_name", "block"]],
  },
  {
    name: "unknown named argument",
    code: "return await add({a: 1, c: 2})",
    expect: [["code.tool_args", "block"]],
  },
  {
    name: "missing required named argument",
    code: "return await fetch_url_as_markdown({max_chars: 10})",
    expect: [["code.tool_args", "block"]],
  },
  {
    name: "too many positional arguments",
    code: "return await add(1, 2, 3)",
    expect: [["code.tool_args", "block"]],
  },
  {
    name: "too few positional arguments",
    code: "return await factorial()",
    expect: [["code.tool_args", "block"]],
  },
  {
    name: "arguments to a tool without parameters",
    code: "return await ping(1)",
    expect: [["code.tool_args", "block"]],
  },
  {
    name: "extra key on an open schema is a warning",
    code: "return await loose({q: 'x', limit: 3})",
    expect: [["code.tool_args", "warn"]],
  },
  { name: "process", code: "return process.env.HOME", expect: [["code.forbidden", "block"]] },
  { name: "require", code: "const fs = require('fs');\nreturn fs", expect: [["code.forbidden", "block"]] },
  {
    name: "dynamic import",
    code: "const m = await import('fs');\nreturn m",
    expect: [["code.forbidden", "block"]],
  },
  { name: "eval", code: "return eval('1 + 1')", expect: [["code.forbidden", "block"]] },
  {
    name: "Function constructor",
    code: "return new Function('return 1')()",
    expect: [["code.forbidden", "block"]],
  },
  {
    name: "constructor trick",
    code: "return (() => 1).constructor('return this')()",
    expect: [["code.forbidden", "block"]],
  },
  { name: "globalThis", code: "return globalThis.add", expect: [["code.forbidden", "block"]] },
  {
    name: "fetch",
    code: "const r = await fetch('https://x.org');\nreturn await r.text()",
    expect: [["code.forbidden", "block"]],
  },
  {
    name: "setTimeout",
    code: "await new Promise((r) => setTimeout(r, 10));\nreturn 1",
    expect: [["code.forbidden", "block"]],
  },
  { name: "no top-level return", code: "const x = await add(1, 2);", expect: [["code.no_return", "warn"]] },
];

describe("guardCode rules", () => {
  it.each([...ok, ...bad])("$name", ({ code, expect: want }) => {
    const r = guardCode(code, TOOLS);
    for (const f of r.findings) Finding.parse(f);
    const got = r.findings.map((f) => [f.rule, f.severity]);
    for (const w of want) expect(got).toContainEqual(w);
    const wanted = new Set(want.map(([rule]) => rule));
    expect(r.findings.filter((f) => !wanted.has(f.rule))).toEqual([]);
    expect(r.ok).toBe(!want.some(([, s]) => s === "block"));
    for (const f of r.findings.filter((x) => x.rule !== "code.no_return")) {
      expect(f.line).toBeGreaterThanOrEqual(1);
      expect(f.column).toBeGreaterThanOrEqual(1);
    }
  });
});

describe("guardCode messages the model can act on", () => {
  it("syntax errors carry line, column and a code frame", () => {
    const [f] = guardCode("const a = 1;\nconst b = (a +;\nreturn b", TOOLS).findings;
    expect(f).toMatchObject({ rule: "code.parse_error", line: 2, column: 15 });
    expect(f!.message).toContain("line 2, column 15");
    expect(f!.message).toContain("  2 | const b = (a +;\n    |               ^");
  });

  it("an unknown tool gets the nearest names", () => {
    const [f] = guardCode("const x = 1;\nreturn await multiplyy(7, 6)", TOOLS).findings;
    expect(f).toMatchObject({ rule: "code.unknown_tool", line: 2, column: 14 });
    expect(f!.suggestions?.[0]).toBe("multiply");
    expect(f!.message).toContain("Did you mean multiply");
  });

  it("an unknown tool with no near name lists what exists", () => {
    const [f] = guardCode("return await zzzzqqq()", TOOLS).findings;
    expect(f!.suggestions).toBeUndefined();
    expect(f!.message).toContain("Available tools: add, multiply");
    expect(f!.message).toContain("docs.read_file");
  });

  it("server.tool typo suggests the server's tools", () => {
    const [f] = guardCode("return await math.factorail(5)", TOOLS).findings;
    expect(f!.suggestions).toEqual(["math.factorial"]);
  });

  it("an ambiguous name lists the qualified forms", () => {
    const [f] = guardCode("return await read_file('x')", TOOLS).findings;
    expect(f!.suggestions).toEqual(["docs.read_file", "fs.read_file"]);
  });

  it("argument problems name the parameter and the signature", () => {
    const [f] = guardCode("return await add({a: 1, bb: 2})", TOOLS).findings;
    expect(f!.message).toContain('no parameter "bb"; did you mean "b"?');
    expect(f!.message).toContain("add(a, b)");
    const [m] = guardCode("return await fetch_url_as_markdown({max_chars: 3})", TOOLS).findings;
    expect(m!.message).toContain('missing the required parameter "url"');
    expect(m!.message).toContain("fetch_url_as_markdown(url, max_chars?)");
  });

  it("fetch points at the tools that fetch", () => {
    const [f] = guardCode("return await fetch('https://x.org')", TOOLS).findings;
    expect(f!.suggestions).toEqual(["fetch_url_as_markdown"]);
  });

  it("every problem is reported at once, each name once, in source order", () => {
    const r = guardCode(
      "process.exit(1);\nconst a = await ad(1, 2);\nconst b = await ad(3, 4);\nreturn eval(a)",
      TOOLS,
    );
    expect(r.findings.map((f) => [f.rule, f.line])).toEqual([
      ["code.forbidden", 1],
      ["code.unknown_tool", 2],
      ["code.forbidden", 4],
    ]);
  });

  it("options: extra globals and allowed names", () => {
    expect(guardCode("return input.x", TOOLS).ok).toBe(false);
    expect(guardCode("return input.x", TOOLS, { extraGlobals: ["input"] }).ok).toBe(true);
    expect(guardCode("setTimeout(() => 1, 5);\nreturn 1", TOOLS, { allow: ["setTimeout"] }).ok).toBe(true);
  });

  it("a blocked guard becomes a StepError for the step", () => {
    const r = guardCode("const a = 1;\nreturn await multiplyy(a, 6)", TOOLS);
    expect(findingsToStepError(r.findings)).toMatchObject({
      code: "GUARD_CODE_UNKNOWN_TOOL",
      line: 2,
      column: 14,
    });
    expect(findingsToStepError(guardCode("return 1", TOOLS).findings)).toBeUndefined();
  });
});

describe("guardCode resolves names the way the sandbox binds them", () => {
  const more: ToolInfo[] = [
    ...TOOLS,
    tool("weather-api", "get-weather", { city: "string" }, ["city"]),
    tool("net", "fetch", { url: "string" }, ["url"]),
  ];
  const cases: Array<[string, string, FindingRule | null]> = [
    ["identifier alias of a dashed name", "return await get_weather({city: 'Oslo'})", null],
    ["identifier alias of a dashed server", "return await weather_api.get_weather('Oslo')", null],
    ["bracket access with the real name", "return await weather_api['get-weather']('Oslo')", null],
    ["alias arguments are still checked", "return await get_weather({town: 'Oslo'})", "code.tool_args"],
    [
      "a tool named fetch is a tool, not the forbidden global",
      "return await fetch({url: 'https://x.org'})",
      null,
    ],
    ["callTool with a qualified name", "return await callTool('math.add', 1, 2)", null],
    ["callTool with a unique plain name", "return await callTool('multiply', {a: 1, b: 2})", null],
    ["callTool arguments are checked", "return await callTool('math.add', 1, 2, 3)", "code.tool_args"],
    ["callTool with an unknown name", "return await callTool('math.mult', 1, 2)", "code.unknown_tool"],
    [
      "callTool with a computed name is left alone",
      "const n = 'math.add';\nreturn await callTool(n, 1, 2)",
      null,
    ],
    ["namespace function", "return await memory.search({query: 'x'})", null],
    ["unknown namespace function", "return await memory.serch({query: 'x'})", "code.unknown_tool"],
    [
      "a dict for a one-object tool with other keys is the whole value",
      "return await configure({ verbose: true, settings: 1 })",
      null,
    ],
    ["a dict keyed by the one parameter is named", "return await configure({ settings: { a: 1 } })", null],
  ];
  it.each(cases)("%s", (_name, code, rule) => {
    const r = guardCode(code, more, { namespaces: { memory: { search: () => null, save: () => null } } });
    expect([...new Set(r.findings.map((f) => f.rule))]).toEqual(rule ? [rule] : []);
  });

  it("suggestions are written the way code calls them", () => {
    const r = guardCode("return await memory.serch('x')", more, {
      namespaces: { memory: ["search", "save"] },
    });
    expect(r.findings[0]!.suggestions).toEqual(["memory.search"]);
    const w = guardCode("return await get_wether('Oslo')", more);
    expect(w.findings[0]!.suggestions?.[0]).toBe("get_weather");
  });
});

describe("findToolCalls", () => {
  it("lists the qualified tools the code calls, in order, once each", () => {
    const code =
      "const a = await multiply(2, 3);\nconst t = await docs.read_file('x');\nreturn add(a, await multiply(1, 1))";
    expect(findToolCalls(code, TOOLS)).toEqual(["math.multiply", "docs.read_file", "math.add"]);
  });
  it("ignores locals and code that does not parse", () => {
    expect(findToolCalls("const add = (a, b) => a + b;\nreturn add(1, 2)", TOOLS)).toEqual([]);
    expect(findToolCalls("return add(", TOOLS)).toEqual([]);
  });
});

describe("guardCode over a tool list it has indexed before", () => {
  it("checks each list array and each set of namespaces as itself", () => {
    const code = "return await notes.search('x') + await subtract(2, 1)";
    const list = [...TOOLS];
    const bare = guardCode(code, list);
    expect(bare.findings.map((f) => f.rule)).toEqual(["code.undefined_name", "code.unknown_tool"]);
    // Same array, namespaces added: notes.search is now a host function.
    const withMemory = guardCode(code, list, { namespaces: { notes: ["search"] } });
    expect(withMemory.findings.map((f) => f.rule)).toEqual(["code.unknown_tool"]);
    // Another namespace set on the same array is indexed apart.
    const other = guardCode(code, list, { namespaces: { notes: ["save"] } });
    expect(other.findings.map((f) => f.rule)).toEqual(["code.unknown_tool", "code.unknown_tool"]);
    // A new list (the hub replaces its array when tools change) gets a new index.
    const grown = [...list, tool("math", "subtract", { a: "number", b: "number" }, ["a", "b"])];
    expect(guardCode(code, grown, { namespaces: { notes: ["search"] } }).ok).toBe(true);
    expect(guardCode(code, list, { namespaces: { notes: ["search"] } }).ok).toBe(false);
  });
});
