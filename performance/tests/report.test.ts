import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../core/index.js";
import {
  QUERY_COLUMNS,
  TOOL_COLUMNS,
  compareRuns,
  queryRow,
  readRun,
  reportMarkdown,
  runComparison,
  runFromOutcomes,
  reportRun,
  toolPerformance,
  toolsExecuted,
  type ItemOutcome,
} from "../index.js";
import { writeCsv } from "../files.js";
import { toolRow } from "../rows.js";

const root = mkdtempSync(join(tmpdir(), "pda-report-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

type Call = ItemOutcome["tools"][number];
const call = (
  tool: string,
  ok: boolean,
  latency_ms: number,
  error_kind: string | null = null,
  server = "math",
): Call => ({
  server,
  tool,
  ok,
  latency_ms,
  error_kind: ok ? null : error_kind,
});

function outcome(i: number, over: Partial<ItemOutcome>): ItemOutcome {
  return {
    key: `row-${i + 1}`,
    index: i,
    query: `q${i}`,
    tools_needed: "",
    complexity: "low",
    expected: "1",
    extra: {},
    status: "succeeded",
    status_reason: null,
    session_id: `s${i}`,
    final_plan: "Step 0: do it",
    output: "1",
    tools: [],
    correct: true,
    correct_by: "exact",
    judge_reason: null,
    steps: 1,
    plan_versions: 1,
    llm_calls: 3,
    tokens: 100,
    duration_ms: 1000,
    human_inputs: 0,
    subagent_calls: 0,
    rate_limited: 0,
    finished_at: "2026-01-01T00:00:00.000Z",
    ...over,
  };
}

function runDir(name: string, outcomes: ItemOutcome[]): string {
  const d = join(root, name);
  mkdirSync(d, { recursive: true });
  writeCsv(
    join(d, "test_queries_output.csv"),
    QUERY_COLUMNS,
    outcomes.map((o) => queryRow(o, [])),
  );
  writeCsv(join(d, "tool_performance_status.csv"), TOOL_COLUMNS, toolPerformance(outcomes).map(toolRow));
  return d;
}

describe("tool performance rows", () => {
  it("counts calls, failures by kind and nearest-rank latency percentiles per server and tool", () => {
    const lat = Array.from({ length: 20 }, (_, i) => i + 1); // 1..20 ms
    const t = toolPerformance([
      outcome(0, { tools: lat.slice(0, 10).map((ms) => call("add", true, ms)) }),
      outcome(1, {
        tools: [
          ...lat.slice(10, 18).map((ms) => call("add", true, ms)),
          call("add", false, 19, "TOOL_TIMEOUT"),
          call("add", false, 20, "TOOL_ERROR"),
          call("add", false, 5, "TOOL_ERROR", "other"),
        ],
      }),
    ]);
    expect(t).toEqual([
      {
        tool: "add",
        server: "math",
        calls: 20,
        failures: 2,
        success_rate: 0.9,
        error_kinds: { TOOL_TIMEOUT: 1, TOOL_ERROR: 1 },
        median_ms: 10,
        p95_ms: 19,
      },
      {
        tool: "add",
        server: "other",
        calls: 1,
        failures: 1,
        success_rate: 0,
        error_kinds: { TOOL_ERROR: 1 },
        median_ms: 5,
        p95_ms: 5,
      },
    ]);
    expect(toolRow(t[0]!)).toEqual({
      "Tool Name": "add",
      "Number of Times Invoked": "20",
      "Success Rate (%)": "90.00",
      Server: "math",
      Failures: "2",
      "Error Kinds": "TOOL_ERROR:1; TOOL_TIMEOUT:1",
      "Median ms": "10",
      "P95 ms": "19",
    });
    expect(toolsExecuted([call("add", true, 1), call("divide", false, 2, "TOOL_ERROR")])).toBe(
      "add(success), divide(failed: TOOL_ERROR)",
    );
    expect(toolsExecuted([])).toBe("No tools executed");
  });
});

describe("pda report", () => {
  const outA = [
    outcome(0, { tools: [call("add", true, 10), call("divide", false, 50, "TOOL_ERROR")] }),
    outcome(1, {
      status: "failed",
      correct: false,
      output: "",
      tools: [call("divide", false, 40, "TOOL_ERROR")],
    }),
    outcome(2, { tools: [call("power", true, 5)] }),
  ];
  const a = runDir("run-a", outA);
  const outB = [
    outcome(0, { tools: [call("add", true, 12), call("divide", true, 30)] }),
    outcome(1, { output: "1", tools: [call("divide", true, 35)] }),
    outcome(2, { correct: false, output: "2", tools: [call("cbrt", true, 900)] }),
  ];
  const b = runDir("run-b", outB);

  it("reads a run from the store's outcomes as from its CSVs, so `pda ui` compares what `pda report` does", () => {
    expect(runFromOutcomes("run-a", a, outA)).toEqual(readRun(a));
    const fromStore = runComparison(runFromOutcomes("run-a", a, outA), runFromOutcomes("run-b", b, outB));
    expect(fromStore).toEqual(runComparison(readRun(a), readRun(b)));
    expect(fromStore.sections.map((s) => s.title)).toContain("Per-tool changes (tools in both runs)");
    expect(reportMarkdown(fromStore)).toMatch(
      /\| divide \| math \| 2 \| 2 \| 0\.0% \| 100\.0% \| \+100\.0 pts \|/,
    );
  });

  it("compares two runs: rates, per-tool deltas, tools only in one run, changed queries, chart", () => {
    const out = join(root, "cmp");
    mkdirSync(out);
    const r = compareRuns(a, b, out);
    const md = r.markdown;
    expect(md).toMatch(/\| Succeeded \| 2 \(66\.7%\) \| 3 \(100\.0%\) \| \+33\.3 pts \|/);
    expect(md).toMatch(/\| Correct \| 2\/3 \(66\.7%\) \| 2\/3 \(66\.7%\) \| 0\.0 pts \|/);
    expect(md).toMatch(
      /\| divide \| math \| 2 \| 2 \| 0\.0% \| 100\.0% \| \+100\.0 pts \| 40 → 30 \| 50 → 35 \|/,
    );
    expect(md).toMatch(/Only in A: `math\.power` \(1 calls, 100\.0%\)/);
    expect(md).toMatch(/Only in B: `math\.cbrt` \(1 calls, 100\.0%\)/);
    expect(md).toMatch(/## Queries that changed outcome \(2: 1 better, 1 worse\)/);
    expect(md).toMatch(/\| q1 \| failed, wrong \| succeeded, correct \|/);
    expect(md).toMatch(/\| q2 \| succeeded, correct \| succeeded, wrong \|/);
    expect(md).toMatch(/## Slowest tools[\s\S]*\| cbrt \| math \| 900 \| 900 \| 1 \|/);
    expect(md).toMatch(/## Least reliable tools[\s\S]*\| divide \| math \| 0\.0% \| 2 \| TOOL_ERROR:2 \|/);
    expect(readFileSync(r.files.md, "utf8")).toBe(md);
    const svg = readFileSync(r.files.svg, "utf8");
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    for (const tool of ["add", "cbrt", "divide", "power"]) expect(svg).toContain(`>${tool}</text>`);
    expect(svg).toContain("not used");
    // The overall change first, and every rate with its calls, so one failed call does not read as a trend.
    expect(svg).toContain("Sessions succeeded: 2 → 3 (of 3 / 3)");
    expect(svg).toContain("67% (2/3)");
    expect(svg).toContain("0% (0/2)"); // divide in A
    expect(svg).toContain("100% (2/2)"); // divide in B
    expect(svg.trim().endsWith("</svg>")).toBe(true);
    // A PNG exists exactly when a renderer was found, and the report says which.
    expect(md).toMatch(r.files.png ? /PNG written by rsvg-convert/ : /no PNG: no SVG renderer found/);
    if (r.files.png) expect(existsSync(r.files.png)).toBe(true);
  });

  it("reports one run", () => {
    const r = reportRun(a);
    expect(r.markdown).toMatch(/- Queries: 3; succeeded 2 \(66\.7%\)/);
    expect(r.markdown).toMatch(/\| divide \| math \| 0\.0% \| 2 \| TOOL_ERROR:2 \|/);
    expect(existsSync(join(a, "report.svg"))).toBe(true);
  });

  it("names the file and the missing column of a folder that is not a batch output", () => {
    const bad = join(root, "bad");
    mkdirSync(bad);
    expect(() => reportRun(bad)).toThrow(/test_queries_output\.csv does not exist/);
    writeFileSync(join(bad, "test_queries_output.csv"), "Query,Output\nx,y\n");
    const e = (() => {
      try {
        reportRun(bad);
      } catch (err) {
        return err;
      }
    })();
    expect(e).toBeInstanceOf(ConfigError);
    expect((e as Error).message).toMatch(
      /test_queries_output\.csv:1: missing columns Tools Needed, Complexity/,
    );
  });
});
