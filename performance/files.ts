/**
 * Files in the output folder, each written whole to a temporary file and renamed into place, so a crash
 * at any moment leaves the previous complete version, never half a file.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "csv-stringify/sync";
import { ConfigError } from "../core/index.js";
import type { QueryFile } from "./input.js";
import { queryColumns, queryRow, toolPerformance, toolRow } from "./rows.js";
import { BatchState, STATE_FILE, TOOL_COLUMNS, type ItemOutcome } from "./schemas.js";

export function writeAtomic(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

/** A CSV with a header; `redact` is applied to every cell (the session store's, so no secret gets out here). */
export function writeCsv(
  path: string,
  columns: readonly string[],
  rows: Array<Record<string, string>>,
  redact: (text: string) => string = (t) => t,
): void {
  writeAtomic(path, stringify(rows.map(redactRow(redact)), { header: true, columns: [...columns] }));
}

function redactRow(redact: (text: string) => string) {
  return (r: Record<string, string>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, redact(v)]));
}

/**
 * The query CSV's line of each outcome, redacted and quoted once: the run's incremental rewrites (every second,
 * each of all rows so far) then join lines instead of redacting and quoting every row again. Keyed by the
 * outcome object, which a run keeps as it was recorded.
 */
export type CsvLines = WeakMap<ItemOutcome, string>;

export function statePath(dir: string): string {
  return join(dir, STATE_FILE);
}

/** The state of the run in `dir`, or null when the folder holds none. Throws ConfigError when unreadable. */
export function readBatchState(dir: string): BatchState | null {
  const p = statePath(dir);
  if (!existsSync(p)) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(p, "utf8"));
  } catch (e) {
    throw new ConfigError(`${p}: not valid JSON (${(e as Error).message}); remove it or use --force`, {
      cause: e,
      code: "BATCH_STATE",
    });
  }
  const parsed = BatchState.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(
      `${p}: ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}; remove it or use --force`,
      { code: "BATCH_STATE" },
    );
  }
  return parsed.data;
}

export function writeBatchState(dir: string, state: BatchState): void {
  writeAtomic(statePath(dir), `${JSON.stringify(state, null, 2)}\n`);
}

/** Both CSVs from the done items' outcomes, in input order, every cell passed through `redact`. */
export function writeOutputs(
  outcomes: ItemOutcome[],
  file: QueryFile,
  files: { queries: string; tools: string },
  redact: (text: string) => string,
  lines: CsvLines = new WeakMap(),
): void {
  const columns = queryColumns(file.extraColumns);
  const clean = redactRow(redact);
  const line = (o: ItemOutcome) => {
    let text = lines.get(o);
    if (text === undefined) {
      text = stringify([clean(queryRow(o, file.extraColumns))], { columns });
      lines.set(o, text);
    }
    return text;
  };
  // csv-stringify's whole output is its header line followed by each record's line: the same text.
  writeAtomic(files.queries, stringify([], { header: true, columns }) + outcomes.map(line).join(""));
  writeCsv(files.tools, TOOL_COLUMNS, toolPerformance(outcomes).map(toolRow), redact);
}

/**
 * Runs `fn` at most once per interval, trailing: a burst of requests gives one write now and one later. The
 * interval stretches to 20 × the last run's own time, so rewriting files that grow with the run (the CSVs of
 * every row so far) stays about 5 % of the time however long the run gets, not a cost growing with its square.
 */
export class Flusher {
  private last = -Infinity; // the first request runs at once
  private took = 0;
  private timer: NodeJS.Timeout | undefined;
  constructor(
    private readonly intervalMs: number,
    private readonly fn: () => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  request(): void {
    if (this.timer) return;
    // An interval of 0 (tests) is every request, unstretched.
    const every = this.intervalMs > 0 ? Math.max(this.intervalMs, 20 * this.took) : 0;
    const wait = this.last + every - this.now();
    if (wait <= 0) return this.run();
    this.timer = setTimeout(() => this.run(), wait);
  }

  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private run(): void {
    this.timer = undefined;
    const start = this.now();
    try {
      this.fn();
    } finally {
      this.last = this.now();
      this.took = this.last - start;
    }
  }
}
