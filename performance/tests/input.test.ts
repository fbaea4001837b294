import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../core/index.js";
import { readQueryFile, unwrapQuotes } from "../index.js";

const dir = mkdtempSync(join(tmpdir(), "pda-input-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

describe("query files", () => {
  it("reads the original system's CSV, extra quotes and its one unbalanced row included", () => {
    const p = file(
      "orig.csv",
      [
        "Query,Tools Needed,Complexity",
        '"""What is 32 + 5 - 3 * 2""",add|subtract|multiply,low',
        '""Get the current time in Toronto and Dubai and display the difference in hours.""",duckduckgo_search_results|subtract,high',
        '"""Find, with a comma, the answer""",x,high',
        "",
        "",
      ].join("\n"),
    );
    const f = readQueryFile(p);
    expect(f.format).toBe("csv");
    expect(f.items.map((i) => i.query)).toEqual([
      "What is 32 + 5 - 3 * 2",
      "Get the current time in Toronto and Dubai and display the difference in hours.",
      "Find, with a comma, the answer",
    ]);
    expect(f.items[0]).toMatchObject({
      key: "row-1",
      index: 0,
      line: 2,
      tools_needed: "add|subtract|multiply",
      complexity: "low",
      expected: null,
    });
    expect(f.extraColumns).toEqual([]);
    expect(f.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it("keeps unknown columns, reads Expected and id, and renames an input column that clashes with an output one", () => {
    const p = file(
      "extra.csv",
      'id,Query,Expected,Owner,Status\nq1,"""Add 1 and 2""",3,ana,draft\nq2,What is 2 + 2,4,bo,\n',
    );
    const f = readQueryFile(p);
    expect(f.items.map((i) => i.key)).toEqual(["q1", "q2"]);
    expect(f.items[0]).toMatchObject({
      query: "Add 1 and 2",
      expected: "3",
      tools_needed: "",
      complexity: "",
    });
    expect(f.extraColumns).toEqual(["Owner", "Status (input)"]);
    expect(f.items[0]!.extra).toEqual({ Owner: "ana", "Status (input)": "draft" });
  });

  it("reads JSONL with ids, non-string values and unknown fields", () => {
    const p = file(
      "q.jsonl",
      [
        '{"id": "a", "query": "What is 1 + 1", "expected": 2, "tags": ["x"]}',
        "",
        '{"Query": "What is 2 + 3", "Tools Needed": "add", "complexity": "low"}',
      ].join("\n"),
    );
    const f = readQueryFile(p);
    expect(f.format).toBe("jsonl");
    expect(f.items).toMatchObject([
      { key: "a", query: "What is 1 + 1", expected: "2", extra: { tags: '["x"]' }, line: 1 },
      { key: "row-2", query: "What is 2 + 3", tools_needed: "add", complexity: "low", line: 3 },
    ]);
    expect(f.extraColumns).toEqual(["tags"]);
  });

  it("names the file and line of bad input", () => {
    expect(configError(() => readQueryFile(file("noq.csv", "Question,Tools\nx,y\n"))).message).toMatch(
      /noq\.csv:1: no Query column.*Question, Tools/,
    );
    expect(
      configError(() => readQueryFile(file("empty.csv", 'Query,Complexity\n"""x""",low\n,high\n'))).message,
    ).toMatch(/empty\.csv:3: the Query is empty/);
    expect(
      configError(() => readQueryFile(file("dup.jsonl", '{"id":"a","query":"x"}\n{"id":"a","query":"y"}\n')))
        .message,
    ).toMatch(/dup\.jsonl:2: id "a" is used twice \(first at line 1\)/);
    expect(
      configError(() => readQueryFile(file("bad.jsonl", '{"query":"x"}\n{"query": \n'))).message,
    ).toMatch(/bad\.jsonl:2: not valid JSON/);
    expect(configError(() => readQueryFile(file("arr.jsonl", '["x"]\n'))).message).toMatch(
      /arr\.jsonl:1: each line must be a JSON object/,
    );
    expect(configError(() => readQueryFile(file("none.csv", "Query\n"))).message).toMatch(/has no queries/);
    expect(
      configError(() => readQueryFile(file("quotes.csv", 'id,Query\n1,ok\n2,"broken "quotes" here\n')))
        .message,
    ).toMatch(/quotes\.csv:3: column Query: unbalanced quotes in "\\"broken/);
    expect(configError(() => readQueryFile(join(dir, "missing.csv"))).message).toMatch(
      /missing\.csv cannot be read/,
    );
  });

  it("reads the bundled sample in the original format, with its Expected answers", () => {
    const f = readQueryFile(join(import.meta.dirname, "..", "samples", "queries.csv"));
    expect(f.items).toHaveLength(13);
    expect(f.items[0]).toMatchObject({
      query: "What is 32 + 5 - 3 * 2",
      tools_needed: "add|subtract|multiply",
      expected: "31",
    });
    expect(f.items.at(-1)).toMatchObject({
      query: "Generate the first 7 Fibonacci numbers",
      expected: "[0, 1, 1, 2, 3, 5, 8]",
    });
    expect(f.items.every((i) => i.expected !== null && !i.query.includes('"'))).toBe(true);
  });

  it("unwraps only values wrapped in quotes", () => {
    expect(unwrapQuotes('"x"')).toBe("x");
    expect(unwrapQuotes('""x"""')).toBe("x");
    expect(unwrapQuotes('Say "hi"')).toBe('Say "hi"');
    expect(unwrapQuotes('"hi" she said')).toBe('"hi" she said');
  });
});
