/**
 * `pda report`: one run's report, or two runs compared, from the CSVs a batch wrote (so any two output
 * folders compare, whatever store they came from): success and correct rates, per-tool deltas, tools only
 * in one run, the slowest and least reliable tools, the queries whose outcome changed, and a chart.
 * A report is built once as data (sections of tables and lists, and the chart's SVG); Markdown is one way to
 * show it (`pda report`), `pda ui`'s batch pages another.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { parse } from "csv-parse/sync";
import { z } from "zod";
import { clip, ConfigError, oneLine } from "../core/index.js";
import { renderChart, svgToPng, type ChartTool } from "./chart.js";
import { writeAtomic } from "./files.js";
import { queryRow, toolPerformance, toolRow } from "./rows.js";
import { QUERY_COLUMNS, QUERY_CSV, TOOL_COLUMNS, TOOL_CSV, type ItemOutcome } from "./schemas.js";
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

/** A run from the store's outcomes, holding what `pda batch` writes to its CSVs for them (rows as in the files). */
export function runFromOutcomes(name: string, dir: string, outcomes: ItemOutcome[]): RunData {
  return {
    dir,
    name,
    queries: outcomes.map((o) => QueryRecord.parse(queryRow(o, []))),
    tools: toolPerformance(outcomes).map((t) => ToolRecord.parse(toolRow(t))),
  };
}

const signed = (x: number, digits = 1) => `${x > 0 ? "+" : ""}${x.toFixed(digits)}`;
/** A table cell: one line, at most `n` characters. */
const cell = (s: string, n = 70) => clip(oneLine(s), n);

/** One part of a report: a heading, then a table (or the sentence saying why there is none), a list, a note. */
export interface ReportSection {
  title: string;
  /** 2: a section; 3: a part of the section before it. */
  level: 2 | 3;
  table?: { head: string[]; rows: string[][] };
  /** Shown in place of the table when it has no rows. */
  empty?: string;
  items?: string[];
  note?: string;
}

/** A run's report or two runs' comparison, as data: `pda report` writes it as Markdown, `pda ui` shows it. */
export interface Report {
  title: string;
  /** The facts under the title (folders, rates, usage). */
  facts: string[];
  sections: ReportSection[];
  /** The per-tool chart (SVG text, every string in it escaped). */
  chart: string;
}

function tableSection(title: string, level: 2 | 3, head: string[], rows: string[][], empty: string) {
  return { title, level, ...(rows.length ? { table: { head, rows } } : { empty }) } satisfies ReportSection;
}

function slowest(r: RunData, title: string, level: 2 | 3, n = 5): ReportSection {
  const t = [...r.tools].sort((a, b) => b["P95 ms"] - a["P95 ms"]).slice(0, n);
  return tableSection(
    title,
    level,
    ["Tool", "Server", "Median ms", "P95 ms", "Calls"],
    t.map((x) => [
      x["Tool Name"],
      x.Server,
      String(x["Median ms"]),
      String(x["P95 ms"]),
      String(x["Number of Times Invoked"]),
    ]),
    "no tool calls",
  );
}

function leastReliable(r: RunData, title: string, level: 2 | 3, n = 5): ReportSection {
  const t = r.tools
    .filter((x) => x.Failures > 0)
    .sort((a, b) => a["Success Rate (%)"] - b["Success Rate (%)"] || b.Failures - a.Failures)
    .slice(0, n);
  return tableSection(
    title,
    level,
    ["Tool", "Server", "Success", "Failures", "Error kinds"],
    t.map((x) => [
      x["Tool Name"],
      x.Server,
      `${x["Success Rate (%)"].toFixed(1)}%`,
      String(x.Failures),
      x["Error Kinds"] || "–",
    ]),
    "every tool call succeeded",
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

function chart(runs: RunData[], legend: string[], title: string): string {
  return renderChart(
    legend,
    chartTools(runs),
    title,
    runs.map((r) => ({ succeeded: rates(r).ok, queries: rates(r).n })),
  );
}

/** The report as Markdown; a table cell's pipes are escaped so it stays one cell. */
export function reportMarkdown(r: Report): string {
  const parts = [`# ${r.title}`, r.facts.map((f) => `- ${f}`).join("\n")];
  for (const s of r.sections) {
    const body: string[] = [];
    if (s.table) {
      const esc = (c: string) => c.replace(/\|/g, "\\|");
      body.push(
        table(
          s.table.head.map(esc),
          s.table.rows.map((row) => row.map(esc)),
        ),
      );
    } else if (s.empty) body.push(`_${s.empty}_`);
    if (s.items) body.push(s.items.map((i) => `- ${i}`).join("\n"));
    if (s.note) body.push(s.note);
    parts.push([`${"#".repeat(s.level)} ${s.title}`, ...body].join("\n\n"));
  }
  return parts.join("\n\n");
}

export interface ReportFiles {
  markdown: string;
  files: { md: string; svg: string; png: string | null };
  pngNote: string;
}

/** Write `<out>/<base>.md`, `.svg` and (when a renderer exists) `.png`; returns the Markdown. */
function writeReport(out: string, base: string, report: Report): ReportFiles {
  // --out may name a folder not made yet, as batch --out does.
  mkdirSync(out, { recursive: true });
  const svg = join(out, `${base}.svg`);
  const png = join(out, `${base}.png`);
  writeAtomic(svg, report.chart);
  const p = svgToPng(svg, png);
  const markdown = `${reportMarkdown(report)}\n\n## Chart\n\n![per-tool success and latency](${base}.svg)${p.ok ? `\n\n![chart as PNG](${base}.png)` : ""}\n\n_${p.note}._\n`;
  const md = join(out, `${base}.md`);
  writeAtomic(md, markdown);
  return { markdown, files: { md, svg, png: p.ok ? png : null }, pngNote: p.note };
}

/** One run's report. */
export function runReport(r: RunData): Report {
  const s = rates(r);
  return {
    title: `Batch report: ${r.name}`,
    facts: [
      `Folder: \`${r.dir}\``,
      `Queries: ${s.n}; succeeded ${s.ok} (${pct(s.ok, s.n)})`,
      `Correct: ${s.correct} of ${s.checked} with an Expected answer (${pct(s.correct, s.checked)})`,
      `${s.llm} model calls, ${s.tokens} tokens, ${s.toolCalls} tool calls; median query ${(s.medianMs / 1000).toFixed(1)} s`,
    ],
    sections: [slowest(r, "Slowest tools (by P95)", 2), leastReliable(r, "Least reliable tools", 2)],
    chart: chart([r], [r.dir], `Per-tool success and latency: ${r.name}`),
  };
}

export function reportRun(dir: string, out = dir): ReportFiles {
  return writeReport(out, "report", runReport(readRun(dir)));
}

/** Two runs compared: A is the earlier or baseline run, B the one judged against it. */
export function runComparison(a: RunData, b: RunData): Report {
  const ra = rates(a);
  const rb = rates(b);
  const label = (r: RunData, other: RunData) => (r.name === other.name ? r.dir : r.name);
  const A = label(a, b);
  const B = label(b, a);
  const sections: ReportSection[] = [];

  const rate = (n: number, d: number) => (d ? (100 * n) / d : 0);
  sections.push({
    title: "Outcome",
    level: 2,
    table: {
      head: ["", "A", "B", "Change"],
      rows: [
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
    },
  });

  const ta = new Map(a.tools.map((t) => [toolKey(t), t]));
  const tb = new Map(b.tools.map((t) => [toolKey(t), t]));
  const both = [...ta.keys()].filter((k) => tb.has(k)).sort();
  sections.push(
    tableSection(
      "Per-tool changes (tools in both runs)",
      2,
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
      "no tool was used in both runs",
    ),
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
  sections.push({
    title: "Tools only in one run",
    level: 2,
    items: [
      `Only in A: ${onlyA.length ? onlyA.join(", ") : "none"}`,
      `Only in B: ${onlyB.length ? onlyB.join(", ") : "none"}`,
    ],
  });
  sections.push(
    { title: "Slowest tools (by P95)", level: 2 },
    slowest(a, "A", 3),
    slowest(b, "B", 3),
    { title: "Least reliable tools", level: 2 },
    leastReliable(a, "A", 3),
    leastReliable(b, "B", 3),
  );

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
  sections.push({
    ...tableSection(
      `Queries that changed outcome (${changed.length}: ${better} better, ${worse} worse)`,
      2,
      ["Query", "A", "B", "Output B"],
      changed.map(([x, y]) => [cell(x.Query), outcomeOf(x), outcomeOf(y), cell(y.Output || "–", 50)]),
      "no query changed outcome",
    ),
    ...(missing ? { note: `${missing} queries appear in only one of the runs.` } : {}),
  });
  return {
    title: `Comparing ${A} (A) with ${B} (B)`,
    facts: [`A: \`${a.dir}\``, `B: \`${b.dir}\``],
    sections,
    chart: chart([a, b], [a.dir, b.dir], `Per-tool success and latency: A = ${A}, B = ${B}`),
  };
}

export function compareRuns(dirA: string, dirB: string, out = dirB): ReportFiles {
  return writeReport(out, "comparison", runComparison(readRun(dirA), readRun(dirB)));
}
