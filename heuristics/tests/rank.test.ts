import { describe, expect, it } from "vitest";
import type { ToolInfo } from "../../core/index.js";
import { createToolRanker, expandQuery, rankTools, toolRankerFor } from "../index.js";

function tool(server: string, name: string, description: string, params: string[]): ToolInfo {
  return {
    server,
    name,
    qualified: `${server}.${name}`,
    unique: true,
    description,
    inputSchema: {
      type: "object",
      properties: Object.fromEntries(params.map((p) => [p, { type: "string" }])),
    },
  };
}

// Descriptions as the bundled servers word them.
const TOOLS: ToolInfo[] = [
  tool("math", "add", "Add two numbers: a + b. Returns a number.", ["a", "b"]),
  tool("math", "subtract", "Subtract b from a: a - b. Returns a number.", ["a", "b"]),
  tool("math", "multiply", "Multiply two numbers: a * b. Returns a number.", ["a", "b"]),
  tool("math", "divide", "Divide a by b: a / b (real division). Fails when b is 0. Returns a number.", [
    "a",
    "b",
  ]),
  tool("math", "power", "Raise a to the power b: a ** b. Returns a number.", ["a", "b"]),
  tool("math", "sin", "Sine of a, a in radians. Returns a number.", ["a"]),
  tool("math", "factorial", "Factorial of a whole number a: a! (0! = 1). Returns a number.", ["a"]),
  tool("web", "fetch_url_as_markdown", "Fetch a web page by URL and return its main text as Markdown.", [
    "url",
    "max_chars",
  ]),
  tool("web", "web_search", "Search the web and return titles, URLs and snippets of the top results.", [
    "query",
    "max_results",
  ]),
  tool("ddg", "ddg_search", "Search the internet with DuckDuckGo; returns result titles and links.", [
    "query",
  ]),
  tool("docs", "search_documents", "Search the local document collection and return matching passages.", [
    "query",
    "top_k",
  ]),
  tool("docs", "list_documents", "List the documents in the local collection.", []),
];

const top = (query: string, k = 3, step?: string) =>
  rankTools(TOOLS, { query, step, topK: k }).tools.map((t) => t.name);

describe("rankTools relevance", () => {
  it("puts multiply above fetch_url_as_markdown for 'what is 7 times 6'", () => {
    const r = rankTools(TOOLS, { query: "what is 7 times 6", topK: 3 });
    const pos = (n: string) => r.scores.findIndex((s) => s.qualified.endsWith(`.${n}`));
    expect(pos("multiply")).toBe(0);
    expect(pos("multiply")).toBeLessThan(pos("fetch_url_as_markdown"));
    expect(r.scores[0]!.explain).toMatch(/^math\.multiply: score .* matched multiply/);
  });

  it.each([
    ["7 * 6", "multiply"],
    ["what is the factorial of 5", "factorial"],
    ["sine of 0.5 radians", "sin"],
    ["divide 10 by 4", "divide"],
    ["fetch https://example.com and give me the text", "fetch_url_as_markdown"],
    ["summarise the web page at this url", "fetch_url_as_markdown"],
    ["search the web for tiger facts", "web_search"],
    ["which documents are in my collection?", "list_documents"],
  ])("%s → %s first", (query, best) => {
    expect(top(query)[0]).toBe(best);
  });

  it("the step text counts too", () => {
    expect(top("help me with my numbers", 1, "raise 2 to the power 10")[0]).toBe("power");
  });

  it("expandQuery adds tool words and keeps the user's", () => {
    expect(expandQuery("what is 7 x 6")).toBe("what is 7 x 6 multiply");
    expect(expandQuery("3 plus 4")).toBe("3 plus 4 add sum");
    expect(expandQuery("hello")).toBe("hello");
  });

  it("a query that matches nothing falls back to reliability, then list order", () => {
    const r = rankTools(TOOLS, {
      query: "zzqx",
      topK: 2,
      stats: { "docs.list_documents": { calls: 50, ok: 50 } },
    });
    expect(r.scores.every((s) => s.relevance === 0)).toBe(true);
    expect(r.tools.map((t) => t.name)).toEqual(["list_documents", "add"]);
  });
});

describe("rankTools reliability", () => {
  const query = "search the web for tiger facts";

  it("demotes a failing tool", () => {
    const before = top(query, 2);
    expect(before[0]).toBe("web_search");
    const r = rankTools(TOOLS, { query, topK: 2, stats: { "web.web_search": { calls: 20, ok: 0 } } });
    const names = r.scores.map((s) => s.qualified);
    expect(names.indexOf("ddg.ddg_search")).toBeLessThan(names.indexOf("web.web_search"));
    const failing = r.scores.find((s) => s.qualified === "web.web_search")!;
    expect(failing.explain).toContain("0/20 ok");
  });

  it("uses a prior so few calls are not punished", () => {
    const rel = (calls: number, ok: number) =>
      rankTools(TOOLS, { query, topK: 1, stats: new Map([["web.web_search", { calls, ok }]]) }).scores.find(
        (s) => s.qualified === "web.web_search",
      )!.reliability;
    expect(rel(0, 0)).toBeCloseTo(0.9);
    expect(rel(1, 0)).toBeCloseTo(0.72);
    expect(rel(20, 0)).toBeCloseTo(0.15);
    expect(rel(100, 100)).toBeGreaterThan(0.99);
    // One failure in one call does not push the best match off the top.
    expect(
      rankTools(TOOLS, { query, topK: 1, stats: { "web.web_search": { calls: 1, ok: 0 } } }).tools[0]!.name,
    ).toBe("web_search");
  });

  it("accepts memory's toolStats() rows as they are", () => {
    const rows = [
      { server: "web", tool: "web_search", calls: 20, ok: 0, failures: 20, success_rate: 0, p50_ms: 5 },
      { server: "ddg", tool: "ddg_search", calls: 20, ok: 20, failures: 0, success_rate: 1, p50_ms: 5 },
    ];
    const r = rankTools(TOOLS, { query, topK: 1, stats: rows });
    expect(r.tools[0]!.name).toBe("ddg_search");
    expect(r.scores.find((s) => s.qualified === "web.web_search")).toMatchObject({ calls: 20, ok: 0 });
  });

  it("accepts stats keyed by plain name for unique tools", () => {
    const r = rankTools(TOOLS, { query, topK: 1, stats: { web_search: { calls: 20, ok: 0 } } });
    expect(r.scores.find((s) => s.qualified === "web.web_search")!.calls).toBe(20);
  });
});

describe("rankTools selection", () => {
  it("returns the top K plus the tools the plan uses, in rank order", () => {
    const r = rankTools(TOOLS, {
      query: "what is 7 times 6",
      topK: 2,
      alwaysInclude: ["sin", "web.fetch_url_as_markdown", "nope"],
    });
    expect(r.tools).toHaveLength(4);
    expect(r.tools[0]!.name).toBe("multiply");
    expect(r.tools.map((t) => t.name)).toEqual(expect.arrayContaining(["sin", "fetch_url_as_markdown"]));
    expect(
      r.scores
        .filter((s) => s.selected === "plan")
        .map((s) => s.qualified)
        .sort(),
    ).toEqual(["math.sin", "web.fetch_url_as_markdown"]);
    expect(r.unknown).toEqual(["nope"]);
    expect(r.scores).toHaveLength(TOOLS.length);
    expect(r.scores.map((s) => s.rank)).toEqual(TOOLS.map((_, i) => i + 1));
  });

  it("a ranker built once serves many queries", () => {
    const ranker = createToolRanker(TOOLS);
    expect(ranker.rank({ query: "7 times 6", topK: 1 }).tools[0]!.name).toBe("multiply");
    expect(ranker.rank({ query: "factorial of 5", topK: 1 }).tools[0]!.name).toBe("factorial");
  });

  it("one ranker per tool-list array: the same list reuses it, a changed list gets a new one", () => {
    const list = TOOLS.slice(0, 7); // the math tools
    const ranker = toolRankerFor(list);
    expect(toolRankerFor(list)).toBe(ranker);
    expect(ranker.rank({ query: "search the web", topK: 1 }).tools[0]!.server).toBe("math");
    // The hub replaces its list when its tools change: the new list is indexed, tools added included.
    const changed = [...list, TOOLS.find((t) => t.name === "web_search")!];
    const next = toolRankerFor(changed);
    expect(next).not.toBe(ranker);
    expect(next.rank({ query: "search the web", topK: 1 }).tools[0]!.name).toBe("web_search");
  });

  it("topK larger than the list returns every tool", () => {
    expect(rankTools(TOOLS, { query: "x", topK: 100 }).tools).toHaveLength(TOOLS.length);
  });
});
