/**
 * `pda report`: one run's report, or two runs compared, from the CSVs a batch wrote (so any two output
 * folders compare, whatever store they came from): success and correct rates, per-tool deltas, tools only
 * in one run, the slowest and least reliable tools, the queries whose outcome changed, and a chart.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { parse } from "csv-parse/sync";
import { z } from "zod";
import { clip, ConfigError, oneLine } from "../core/index.js";
import { renderChart, svgToPng, type ChartTool } from "./chart.js";
import { writeAtomic } from "./files.js";
import { QUERY_COLUMNS, QUERY_CSV, TOOL_COLUMNS, TOOL_CSV } from "./schemas.js";
import { pct, table } from "./summary.js";

const num = z.coerce.number();

export const QueryRecord = z.object({
  Query: z.string(),
  Status: z.string(),
  Expected: z.string(),
  Correct: z.enum(["true", "false", ""]),
  Output: z.string(),
  Tokens: num,
  "LLM Calls": num,
  "Duration ms": num,
});
export type QueryRecord = z.infer<typeof QueryRecord>;

export const ToolRecord = z.object({
  "Tool Name": z.string(),
  Server: z.string(),
  "Number of Times Invoked": num,
  "Success Rate (%)": num,
  Failures: num,
  "Error Kinds": z.string(),
  "Median ms": num,
  "P95 ms": num,
});
export type ToolRecord = z.infer<typeof ToolRecord>;

export interface RunData {
  dir: string;
  name: string;
  queries: QueryRecord[];
  tools: ToolRecord[];
}

function readCsv<T>(path: string, columns: readonly string[], schema: z.ZodType<T>): T[] {
  if (!existsSync(path)) throw new ConfigError(`${path} does not exist; is this a pda batch output folder?`);
  const records = parse(readFileSync(path, "utf8"), { bom: true, skip_empty_lines: true }) as string[][];
  const [header, ...body] = records;
  const missing = columns.filter((c) => !header?.includes(c));
  if (!header || missing.length) {
    throw new ConfigError(`${path}:1: missing column${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`);
  }
  return body.map((r, i) => {
    const obj = Object.fromEntries(header.map((h, j) => [h, r[j] ?? ""]));
    const parsed = schema.safeParse(obj);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ConfigError(`${path}:${i + 2}: ${issue?.path.join(".")}: ${issue?.message}`);
    }
    return parsed.data;
  });
}

export function readRun(dir: string): RunData {
  const d = resolve(dir);
  return {
    dir: d,
    name: basename(d),
    queries: readCsv(join(d, QUERY_CSV), QUERY_COLUMNS, QueryRecord),
    tools: readCsv(join(d, TOOL_CSV), TOOL_COLUMNS, ToolRecord),
  };
}

const toolKey = (t: ToolRecord) => `${t.Server}.${t["Tool Name"]}`;
const outcomeOf = (q: QueryRecord) =>
  `${q.Status}${q.Correct === "" ? "" : q.Correct === "true" ? ", correct" : ", wrong"}`;
const good = (q: QueryRecord) => q.Status === "succeeded" && q.Correct !== "false";

function rates(r: RunData) {
  const n = r.queries.length;
  const ok = r.queries.filter((q) => q.Status === "succeeded").length;
  const checked = r.queries.filter((q) => q.Correct !== "");
  const correct = checked.filter((q) => q.Correct === "true").length;
  const durations = r.queries.map((q) => q["Duration ms"]).sort((a, b) => a - b);
  return {
    n,
    ok,
    checked: checked.length,
    correct,
    tokens: r.queries.reduce((s, q) => s + q.Tokens, 0),
    llm: r.queries.reduce((s, q) => s + q["LLM Calls"], 0),
    medianMs: durations.length ? durations[Math.ceil(durations.length / 2) - 1]! : 0,
    toolCalls: r.tools.reduce((s, t) => s + t["Number of Times Invoked"], 0),
  };
}

const signed = (x: number, digits = 1) => `${x > 0 ? "+" : ""}${x.toFixed(digits)}`;
/** A table cell: one line, pipes escaped, at most `n` characters. */
const cell = (s: string, n = 70) => clip(oneLine(s).replace(/\|/g, "\\|"), n);

function slowest(r: RunData, n = 5): string {
  const t = [...r.tools].sort((a, b) => b["P95 ms"] - a["P95 ms"]).slice(0, n);
  if (!t.length) return "_no tool calls_";
  return table(
    ["Tool", "Server", "Median ms", "P95 ms", "Calls"],
    t.map((x) => [
      x["Tool Name"],
      x.Server,
      String(x["Median ms"]),
      String(x["P95 ms"]),
      String(x["Number of Times Invoked"]),
    ]),
  );
}

function leastReliable(r: RunData, n = 5): string {
  const t = r.tools
    .filter((x) => x.Failures > 0)
    .sort((a, b) => a["Success Rate (%)"] - b["Success Rate (%)"] || b.Failures - a.Failures)
    .slice(0, n);
  if (!t.length) return "_every tool call succeeded_";
  return table(
    ["Tool", "Server", "Success", "Failures", "Error kinds"],
    t.map((x) => [
      x["Tool Name"],
      x.Server,
      `${x["Success Rate (%)"].toFixed(1)}%`,
      String(x.Failures),
      x["Error Kinds"] || "–",
    ]),
  );
}

function chartTools(runs: RunData[]): ChartTool[] {
  const tools = runs.flatMap((r) => r.tools);
  const keys = [...new Set(tools.map(toolKey))].sort();
  // The plain tool name unless two servers have a tool of that name.
  const servers = (name: string) =>
    new Set(tools.filter((t) => t["Tool Name"] === name).map((t) => t.Server)).size;
  return keys.map((k) => {
    const first = tools.find((t) => toolKey(t) === k)!;
    return {
      tool: servers(first["Tool Name"]) > 1 ? k : first["Tool Name"],
      values: runs.map((r) => {
        const t = r.tools.find((x) => toolKey(x) === k);
        return t
          ? {
              success_rate: t["Success Rate (%)"] / 100,
              calls: t["Number of Times Invoked"],
              succeeded: t["Number of Times Invoked"] - t.Failures,
              median_ms: t["Median ms"],
              p95_ms: t["P95 ms"],
            }
          : null;
      }),
    };
  });
}

export interface ReportFiles {
  markdown: string;
  files: { md: string; svg: string; png: string | null };
  pngNote: string;
}

/** Write `<out>/<base>.md`, `.svg` and (when a renderer exists) `.png`; returns the Markdown. */
function writeReport(out: string, base: string, runs: RunData[], title: string, body: string): ReportFiles {
  // --out may name a folder not made yet, as batch --out does.
  mkdirSync(out, { recursive: true });
  const svg = join(out, `${base}.svg`);
  const png = join(out, `${base}.png`);
  writeAtomic(
    svg,
    renderChart(
      runs.map((r) => r.dir),
      chartTools(runs),
      title,
      runs.map((r) => ({ succeeded: rates(r).ok, queries: rates(r).n })),
    ),
  );
  const p = svgToPng(svg, png);
  const markdown = `${body}\n\n## Chart\n\n![per-tool success and latency](${base}.svg)${p.ok ? `\n\n![chart as PNG](${base}.png)` : ""}\n\n_${p.note}._\n`;
  const md = join(out, `${base}.md`);
  writeAtomic(md, markdown);
  return { markdown, files: { md, svg, png: p.ok ? png : null }, pngNote: p.note };
}

export function reportRun(dir: string, out = dir): ReportFiles {
  const r = readRun(dir);
  const s = rates(r);
  const body = [
    `# Batch report: ${r.name}`,
    [
      `- Folder: \`${r.dir}\``,
      `- Queries: ${s.n}; succeeded ${s.ok} (${pct(s.ok, s.n)})`,
      `- Correct: ${s.correct} of ${s.checked} with an Expected answer (${pct(s.correct, s.checked)})`,
      `- ${s.llm} model calls, ${s.tokens} tokens, ${s.toolCalls} tool calls; median query ${(s.medianMs / 1000).toFixed(1)} s`,
    ].join("\n"),
    `## Slowest tools (by P95)\n\n${slowest(r)}`,
    `## Least reliable tools\n\n${leastReliable(r)}`,
  ].join("\n\n");
  return writeReport(out, "report", [r], `Per-tool success and latency: ${r.name}`, body);
}

export function compareRuns(dirA: string, dirB: string, out = dirB): ReportFiles {
  const a = readRun(dirA);
  const b = readRun(dirB);
  const ra = rates(a);
  const rb = rates(b);
  const label = (r: RunData, other: RunData) => (r.name === other.name ? r.dir : r.name);
  const A = label(a, b);
  const B = label(b, a);
  const parts: string[] = [`# Comparing ${A} (A) with ${B} (B)`];
  parts.push(`- A: \`${a.dir}\`\n- B: \`${b.dir}\``);

  const rate = (n: number, d: number) => (d ? (100 * n) / d : 0);
  parts.push(
    `## Outcome\n\n` +
      table(
        ["", "A", "B", "Change"],
        [
          ["Queries", String(ra.n), String(rb.n), signed(rb.n - ra.n, 0)],
          [
            "Succeeded",
            `${ra.ok} (${pct(ra.ok, ra.n)})`,
            `${rb.ok} (${pct(rb.ok, rb.n)})`,
            `${signed(rate(rb.ok, rb.n) - rate(ra.ok, ra.n))} pts`,
          ],
          [
            "Correct",
            `${ra.correct}/${ra.checked} (${pct(ra.correct, ra.checked)})`,
            `${rb.correct}/${rb.checked} (${pct(rb.correct, rb.checked)})`,
            `${signed(rate(rb.correct, rb.checked) - rate(ra.correct, ra.checked))} pts`,
          ],
          ["Model calls", String(ra.llm), String(rb.llm), signed(rb.llm - ra.llm, 0)],
          ["Tokens", String(ra.tokens), String(rb.tokens), signed(rb.tokens - ra.tokens, 0)],
          ["Tool calls", String(ra.toolCalls), String(rb.toolCalls), signed(rb.toolCalls - ra.toolCalls, 0)],
          [
            "Median query",
            `${(ra.medianMs / 1000).toFixed(1)} s`,
            `${(rb.medianMs / 1000).toFixed(1)} s`,
            `${signed((rb.medianMs - ra.medianMs) / 1000)} s`,
          ],
        ],
      ),
  );

  const ta = new Map(a.tools.map((t) => [toolKey(t), t]));
  const tb = new Map(b.tools.map((t) => [toolKey(t), t]));
  const both = [...ta.keys()].filter((k) => tb.has(k)).sort();
  parts.push(
    `## Per-tool changes (tools in both runs)\n\n` +
      (both.length
        ? table(
            [
              "Tool",
              "Server",
              "Calls A",
              "Calls B",
              "Success A",
              "Success B",
              "Change",
              "Median A→B ms",
              "P95 A→B ms",
            ],
            both
              .map((k) => [ta.get(k)!, tb.get(k)!] as const)
              .sort(
                ([x1, y1], [x2, y2]) =>
                  y1["Success Rate (%)"] -
                  x1["Success Rate (%)"] -
                  (y2["Success Rate (%)"] - x2["Success Rate (%)"]),
              )
              .map(([x, y]) => [
                x["Tool Name"],
                x.Server,
                String(x["Number of Times Invoked"]),
                String(y["Number of Times Invoked"]),
                `${x["Success Rate (%)"].toFixed(1)}%`,
                `${y["Success Rate (%)"].toFixed(1)}%`,
                `${signed(y["Success Rate (%)"] - x["Success Rate (%)"])} pts`,
                `${x["Median ms"]} → ${y["Median ms"]}`,
                `${x["P95 ms"]} → ${y["P95 ms"]}`,
              ]),
          )
        : "_no tool was used in both runs_"),
  );
  const only = (m: Map<string, ToolRecord>, other: Map<string, ToolRecord>) =>
    [...m.values()]
      .filter((t) => !other.has(toolKey(t)))
      .map(
        (t) =>
          `\`${toolKey(t)}\` (${t["Number of Times Invoked"]} calls, ${t["Success Rate (%)"].toFixed(1)}%)`,
      );
  const onlyA = only(ta, tb);
  const onlyB = only(tb, ta);
  parts.push(
    `## Tools only in one run\n\n- Only in A: ${onlyA.length ? onlyA.join(", ") : "none"}\n- Only in B: ${onlyB.length ? onlyB.join(", ") : "none"}`,
  );
  parts.push(`## Slowest tools (by P95)\n\n### A\n\n${slowest(a)}\n\n### B\n\n${slowest(b)}`);
  parts.push(`## Least reliable tools\n\n### A\n\n${leastReliable(a)}\n\n### B\n\n${leastReliable(b)}`);

  // Queries are matched by their text (the n-th occurrence with the n-th, for repeated queries).
  const keyed = (r: RunData) => {
    const seen = new Map<string, number>();
    return new Map(
      r.queries.map((q) => {
        const n = (seen.get(q.Query) ?? 0) + 1;
        seen.set(q.Query, n);
        return [`${q.Query}\u0000${n}`, q] as const;
      }),
    );
  };
  const qa = keyed(a);
  const qb = keyed(b);
  const changed = [...qa]
    .filter(([k, x]) => qb.has(k) && outcomeOf(qb.get(k)!) !== outcomeOf(x))
    .map(([k, x]) => [x, qb.get(k)!] as const);
  const better = changed.filter(([x, y]) => !good(x) && good(y)).length;
  const worse = changed.filter(([x, y]) => good(x) && !good(y)).length;
  const missing =
    [...qa.keys()].filter((k) => !qb.has(k)).length + [...qb.keys()].filter((k) => !qa.has(k)).length;
  parts.push(
    `## Queries that changed outcome (${changed.length}: ${better} better, ${worse} worse)\n\n` +
      (changed.length
        ? table(
            ["Query", "A", "B", "Output B"],
            changed.map(([x, y]) => [cell(x.Query), outcomeOf(x), outcomeOf(y), cell(y.Output || "–", 50)]),
          )
        : "_no query changed outcome_") +
      (missing ? `\n\n${missing} queries appear in only one of the runs.` : ""),
  );
  return writeReport(
    out,
    "comparison",
    [a, b],
    `Per-tool success and latency: A = ${A}, B = ${B}`,
    parts.join("\n\n"),
  );
}
