/**
 * Query files: CSV with the original system's columns (`Query, Tools Needed, Complexity`, optional
 * `Expected`, optional `id`; its cells came wrapped in an extra pair of quotes, some unbalanced) or JSONL
 * with the same fields. Unknown columns are kept and passed through to the output.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { extname } from "node:path";
import { parse } from "csv-parse/sync";
import { clip, ConfigError } from "../core/index.js";
import { QUERY_COLUMNS, QueryItem } from "./schemas.js";

export interface QueryFile {
  path: string;
  format: "csv" | "jsonl";
  sha256: string;
  items: QueryItem[];
  /** Unknown columns, in the order first seen. */
  extraColumns: string[];
}

type Known = "query" | "tools_needed" | "complexity" | "expected" | "id";

/** Header names as written (any case, spaces or underscores) → the field they fill. */
function knownField(name: string): Known | undefined {
  const n = name
    .trim()
    .toLowerCase()
    .replace(/[\s_-]+/g, " ");
  if (n === "query") return "query";
  if (n === "tools needed") return "tools_needed";
  if (n === "complexity") return "complexity";
  if (n === "expected" || n === "expected answer") return "expected";
  if (n === "id") return "id";
  return undefined;
}

/**
 * Remove the extra quotes the original system wrapped cells in (`"""text"""` parses to `"text"`; one of its
 * rows even had `""text"""`). Only a value that starts and ends with a quote is touched.
 */
export function unwrapQuotes(value: string): string {
  const v = value.trim();
  if (v.length >= 2 && v.startsWith('"') && v.endsWith('"'))
    return v.replace(/^"+/, "").replace(/"+$/, "").trim();
  return v;
}

/** An input column that collides with an output column gets an "(input)" suffix so nothing is overwritten. */
export function passThroughName(name: string): string {
  return (QUERY_COLUMNS as readonly string[]).includes(name) ? `${name} (input)` : name;
}

export function readQueryFile(path: string): QueryFile {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new ConfigError(`query file ${path} cannot be read: ${(e as Error).message}`, {
      cause: e,
      code: "BATCH_INPUT",
    });
  }
  const format = detectFormat(path, text);
  const rows = format === "csv" ? csvRows(path, text) : jsonlRows(path, text);
  if (rows.length === 0) throw new ConfigError(`query file ${path} has no queries`, { code: "BATCH_INPUT" });

  const items: QueryItem[] = [];
  const extraColumns: string[] = [];
  const seen = new Map<string, number>();
  for (const [i, row] of rows.entries()) {
    const fields: Partial<Record<Known, string>> = {};
    const extra: Record<string, string> = {};
    for (const [name, value] of row.cells) {
      const k = knownField(name);
      if (k) fields[k] = value;
      else {
        const col = passThroughName(name);
        extra[col] = value;
        if (!extraColumns.includes(col)) extraColumns.push(col);
      }
    }
    const where = `${path}:${row.line}`;
    if (!fields.query?.trim()) {
      throw new ConfigError(
        `${where}: the Query is empty (columns: ${row.cells.map(([n]) => n).join(", ")})`,
        {
          code: "BATCH_INPUT",
        },
      );
    }
    const key = fields.id?.trim() || `row-${i + 1}`;
    const first = seen.get(key);
    if (first !== undefined) {
      throw new ConfigError(`${where}: id "${key}" is used twice (first at line ${first})`, {
        code: "BATCH_INPUT",
      });
    }
    seen.set(key, row.line);
    items.push(
      QueryItem.parse({
        key,
        index: i,
        line: row.line,
        query: fields.query.trim(),
        tools_needed: fields.tools_needed ?? "",
        complexity: fields.complexity ?? "",
        expected: fields.expected?.trim() ? fields.expected.trim() : null,
        extra,
      }),
    );
  }
  return {
    path,
    format,
    sha256: createHash("sha256").update(text).digest("hex"),
    items,
    extraColumns,
  };
}

function detectFormat(path: string, text: string): "csv" | "jsonl" {
  const ext = extname(path).toLowerCase();
  if (ext === ".csv" || ext === ".tsv") return "csv";
  if (ext === ".jsonl" || ext === ".ndjson") return "jsonl";
  return text.trimStart().startsWith("{") ? "jsonl" : "csv";
}

interface RawRow {
  line: number;
  cells: Array<[string, string]>;
}

function csvRows(path: string, text: string): RawRow[] {
  let records: Array<{ record: string[]; info: { lines: number } }>;
  try {
    records = parse(text, {
      bom: true,
      info: true,
      relax_quotes: true,
      skip_empty_lines: true,
      delimiter: extname(path).toLowerCase() === ".tsv" ? "\t" : ",",
    }) as unknown as Array<{ record: string[]; info: { lines: number } }>;
  } catch (e) {
    const line = (e as { lines?: number }).lines;
    throw new ConfigError(`${path}${line ? `:${line}` : ""}: not a valid CSV file: ${(e as Error).message}`, {
      cause: e,
      code: "BATCH_INPUT",
    });
  }
  const [head, ...body] = records;
  if (!head) return [];
  const header = head.record.map(unwrapQuotes);
  if (!header.some((h) => knownField(h) === "query")) {
    throw new ConfigError(
      `${path}:1: no Query column in the header (found: ${header.join(", ")}); expected Query, Tools Needed, Complexity[, Expected]`,
      { code: "BATCH_INPUT" },
    );
  }
  const rows = body.filter((r) => r.record.some((c) => c.trim() !== ""));
  for (const r of rows) {
    // relax_quotes keeps the old files' extra quotes, but also a cell opened with a quote and never closed.
    const i = r.record.findIndex((c) => /^\s*"/.test(c) && !/"\s*$/.test(c));
    if (i >= 0) {
      throw new ConfigError(
        `${path}:${r.info.lines}: column ${header[i] ?? i + 1}: unbalanced quotes in ${JSON.stringify(clip(r.record[i]!, 60))}; ` +
          `quote a cell whole ("…") and double any quote inside it ("")`,
        { code: "BATCH_INPUT" },
      );
    }
  }
  return rows.map((r) => ({
    line: r.info.lines,
    cells: header.map((h, i): [string, string] => [h, unwrapQuotes(r.record[i] ?? "")]),
  }));
}

function jsonlRows(path: string, text: string): RawRow[] {
  const rows: RawRow[] = [];
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (!line) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      throw new ConfigError(`${path}:${i + 1}: not valid JSON: ${(e as Error).message}`, {
        cause: e,
        code: "BATCH_INPUT",
      });
    }
    if (!value || typeof value !== "object" || Array.isArray(value)) {
      throw new ConfigError(`${path}:${i + 1}: each line must be a JSON object with at least "query"`, {
        code: "BATCH_INPUT",
      });
    }
    rows.push({
      line: i + 1,
      cells: Object.entries(value as Record<string, unknown>).map(([k, v]): [string, string] => [
        k,
        v === null || v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v),
      ]),
    });
  }
  return rows;
}
