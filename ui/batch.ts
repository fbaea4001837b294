/**
 * What the batch pages show: one run's report and per-tool table, and two runs compared, built by
 * performance/'s report code from the outcomes the store holds (the rows `pda batch` writes to its CSVs), so
 * the page and `pda report` agree without the UI reading the run's output folder.
 */
import type { BatchItem, BatchRun, SessionStore } from "../memory/index.js";
import {
  loadOutcomes,
  runComparison,
  runFromOutcomes,
  runReport,
  type Report,
  type RunData,
} from "../performance/index.js";

export interface BatchPage {
  run: BatchRun;
  items: BatchItem[];
  /** The done items' report: rates, usage, slowest and least reliable tools, the chart. */
  report: Report;
  /** tool_performance_status.csv's rows. */
  tools: RunData["tools"];
}

/** A run as the report code reads it; named by its output folder when it has one, so two runs tell apart. */
function runData(store: SessionStore, run: BatchRun): RunData {
  const out = typeof run.options.out === "string" ? run.options.out : null;
  return runFromOutcomes(run.id.slice(0, 8), out ?? run.id, loadOutcomes(store, run.id));
}

export function batchPage(store: SessionStore, id: string): BatchPage {
  const run = store.batchRun(id);
  const data = runData(store, run);
  return { run, items: store.batchItems(run.id), report: runReport(data), tools: data.tools };
}

/** Run `a` (the baseline) against run `b`. */
export function batchComparison(store: SessionStore, a: string, b: string): Report {
  return runComparison(runData(store, store.batchRun(a)), runData(store, store.batchRun(b)));
}
