/**
 * From stored outcomes to CSV rows: one row per query with the exact columns, and per-tool performance
 * computed from the tool calls the store logged for each query's session (never guessed from code).
 */
import { QUERY_COLUMNS, TOOL_COLUMNS, type ItemOutcome } from "./schemas.js";
import { percentile } from "../core/index.js";

export type CsvRow = Record<string, string>;

/** "add(success), divide(failed: TOOL_ERROR)" in call order, as the original system's column read. */
export function toolsExecuted(tools: ItemOutcome["tools"]): string {
  if (tools.length === 0) return "No tools executed";
  return tools.map((t) => `${t.tool}(${t.ok ? "success" : `failed: ${t.error_kind ?? "error"}`})`).join(", ");
}

export function queryRow(o: ItemOutcome, extraColumns: readonly string[]): CsvRow {
  const row: Record<(typeof QUERY_COLUMNS)[number], string> = {
    Query: o.query,
    "Tools Needed": o.tools_needed,
    Complexity: o.complexity,
    "Final Plan": o.final_plan,
    Output: o.output,
    "Tools Executed": toolsExecuted(o.tools),
    Status: o.status,
    Expected: o.expected ?? "",
    Correct: o.correct === null ? "" : String(o.correct),
    Steps: String(o.steps),
    "Plan Versions": String(o.plan_versions),
    "LLM Calls": String(o.llm_calls),
    Tokens: String(o.tokens),
    "Duration ms": String(Math.round(o.duration_ms)),
    "Human Inputs": String(o.human_inputs),
    "Session Id": o.session_id,
    "Sub-agent Calls": String(o.subagent_calls),
  };
  const out: CsvRow = { ...row };
  for (const c of extraColumns) out[c] = o.extra[c] ?? "";
  return out;
}

/** The query CSV's header: our columns, then passed-through ones. */
export function queryColumns(extraColumns: readonly string[]): string[] {
  return [...QUERY_COLUMNS, ...extraColumns];
}

export interface ToolPerf {
  tool: string;
  server: string;
  calls: number;
  failures: number;
  success_rate: number;
  error_kinds: Record<string, number>;
  median_ms: number;
  p95_ms: number;
}

export function toolPerformance(outcomes: ItemOutcome[]): ToolPerf[] {
  const by = new Map<
    string,
    { tool: string; server: string; lat: number[]; fail: number; kinds: Record<string, number> }
  >();
  for (const o of outcomes) {
    for (const t of o.tools) {
      const key = `${t.server}\u0000${t.tool}`;
      let s = by.get(key);
      if (!s) by.set(key, (s = { tool: t.tool, server: t.server, lat: [], fail: 0, kinds: {} }));
      s.lat.push(t.latency_ms);
      if (!t.ok) {
        s.fail += 1;
        const k = t.error_kind ?? "unknown";
        s.kinds[k] = (s.kinds[k] ?? 0) + 1;
      }
    }
  }
  return [...by.values()]
    .map((s) => {
      const lat = [...s.lat].sort((a, b) => a - b);
      return {
        tool: s.tool,
        server: s.server,
        calls: lat.length,
        failures: s.fail,
        success_rate: (lat.length - s.fail) / lat.length,
        error_kinds: s.kinds,
        median_ms: percentile(lat, 0.5),
        p95_ms: percentile(lat, 0.95),
      };
    })
    .sort((a, b) => a.tool.localeCompare(b.tool) || a.server.localeCompare(b.server));
}

export function errorKindsText(kinds: Record<string, number>): string {
  return Object.entries(kinds)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([k, n]) => `${k}:${n}`)
    .join("; ");
}

export function toolRow(t: ToolPerf): CsvRow {
  const row: Record<(typeof TOOL_COLUMNS)[number], string> = {
    "Tool Name": t.tool,
    "Number of Times Invoked": String(t.calls),
    "Success Rate (%)": (t.success_rate * 100).toFixed(2),
    Server: t.server,
    Failures: String(t.failures),
    "Error Kinds": errorKindsText(t.error_kinds),
    "Median ms": String(Math.round(t.median_ms)),
    "P95 ms": String(Math.round(t.p95_ms)),
  };
  return row;
}
