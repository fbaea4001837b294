/**
 * The bookkeeping of one `pda batch` invocation, whichever way its queries run (in this process, or on queue
 * workers): the run opened in the store and its folder, the counts the progress bar shows, the outcomes
 * saved so far (for the incremental CSV rewrites), why it stopped, and the final files.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { PdaError, errorMessage, systemClock, type Clock } from "../core/index.js";
import { Flusher, writeAtomic, writeBatchState, writeOutputs, type CsvLines } from "./files.js";
import { readQueryFile, type QueryFile } from "./input.js";
import type { LimiterRegistry } from "./limiter.js";
import { loadOutcomes, openRun } from "./run-store.js";
import {
  QUERY_CSV,
  SUMMARY_MD,
  TOOL_CSV,
  type BatchState,
  type Invocation,
  type ItemOutcome,
  type QueryItem,
} from "./schemas.js";
import { renderSummary } from "./summary.js";
import type { BatchDeps, BatchEvent, BatchOptions, BatchResult, Counts } from "./types.js";

type Stop = { status: "interrupted" | "stopped"; error: PdaError | null };

export class RunLedger {
  readonly file: QueryFile;
  readonly out: string;
  readonly state: BatchState;
  readonly resumed: boolean;
  /** The items not done yet, in input order. */
  readonly todo: QueryItem[];
  /** The session each not-done row last ran (a process that died left it "running"), by item key. */
  readonly lastSession: Map<string, string>;
  readonly invocation: Invocation;
  readonly counts: Counts;
  readonly files: BatchResult["files"];
  readonly clock: Clock;
  private readonly saved: Map<string, ItemOutcome>;
  private readonly flusher: Flusher;
  /** The saved outcomes' query CSV lines, made once each for the rewrites. */
  private readonly csvLines: CsvLines = new WeakMap();
  private stopped: Stop | null = null;

  /** Open (or reopen with --resume) the run of `opts.out`, and record this invocation in batch.json. */
  constructor(
    private readonly opts: BatchOptions,
    private readonly deps: Pick<BatchDeps, "store" | "newId" | "clock">,
  ) {
    this.clock = deps.clock ?? systemClock;
    this.file = readQueryFile(opts.input);
    this.out = resolve(opts.out);
    mkdirSync(this.out, { recursive: true });
    const { state, resumed } = openRun(opts, deps, this.file, this.out, this.clock);
    this.state = state;
    this.resumed = resumed;
    const stored = new Map(deps.store.batchItems(state.run_id).map((i) => [i.item_key, i]));
    this.todo = this.file.items.filter((it) => stored.get(it.key)?.status !== "done");
    this.lastSession = new Map(
      this.todo.flatMap((it) => {
        const id = stored.get(it.key)?.session_id;
        return id ? [[it.key, id] as const] : [];
      }),
    );
    const concurrency = Math.max(1, Math.floor(opts.concurrency));
    this.invocation = {
      started_at: this.clock.iso(),
      finished_at: null,
      status: "running",
      concurrency,
      ran: 0,
      rate_limited: 0,
      rate_limit_wait_ms: 0,
      min_limit: concurrency,
      transient_retries: 0,
      judge_tokens: 0,
      peak_rss_mb: 0,
      error: null,
    };
    state.invocations.push(this.invocation);
    writeBatchState(this.out, state);

    this.saved = new Map(loadOutcomes(deps.store, state.run_id).map((o) => [o.key, o]));
    this.counts = {
      total: this.file.items.length,
      done: this.saved.size,
      failed: 0,
      in_flight: 0,
      tokens: 0,
    };
    for (const o of this.saved.values()) {
      if (o.status !== "succeeded") this.counts.failed += 1;
      this.counts.tokens += o.tokens;
    }
    const out = this.out;
    this.files = {
      queries: join(out, QUERY_CSV),
      tools: join(out, TOOL_CSV),
      summary: join(out, SUMMARY_MD),
    };
    this.flusher = new Flusher(opts.flushMs ?? 1000, () => this.flush());
    this.emit({
      type: "start",
      run_id: state.run_id,
      total: this.counts.total,
      already_done: this.counts.done,
      to_run: this.todo.length,
      resumed,
    });
  }

  get runId(): string {
    return this.state.run_id;
  }

  get stop(): Stop | null {
    return this.stopped;
  }

  emit(e: BatchEvent): void {
    if (e.type === "retry") this.invocation.transient_retries += 1;
    this.opts.onEvent?.(e);
  }

  /** The first reason to stop wins; queries not started stay pending for --resume. */
  stopWith(status: Stop["status"], error: PdaError | null): void {
    if (this.stopped) return;
    this.stopped = { status, error };
    this.emit({ type: "stop", reason: error ? error.message : "interrupted" });
  }

  started(item: QueryItem): void {
    this.counts.in_flight += 1;
    this.emit({ type: "item_start", key: item.key, index: item.index, counts: { ...this.counts } });
  }

  /** A query that ended without a row (Ctrl-C, a fatal model error): left for --resume. */
  leftPending(key: string, reason: string): void {
    this.counts.in_flight = Math.max(0, this.counts.in_flight - 1);
    this.emit({ type: "item_pending", key, reason, counts: { ...this.counts } });
  }

  /** A row now durable in the store (the caller saved it). */
  recorded(
    outcome: ItemOutcome,
    judgeTokens: number,
    from: { worker?: string; wasInFlight?: boolean } = {},
  ): void {
    this.saved.set(outcome.key, outcome);
    const c = this.counts;
    if (from.wasInFlight !== false) c.in_flight = Math.max(0, c.in_flight - 1);
    c.done += 1;
    c.tokens += outcome.tokens;
    if (outcome.status !== "succeeded") c.failed += 1;
    this.invocation.ran += 1;
    this.invocation.judge_tokens += judgeTokens;
    this.emit({
      type: "item_end",
      outcome,
      counts: { ...c },
      ...(from.worker ? { worker: from.worker } : {}),
    });
    this.flusher.request();
  }

  /** Whether a row is already durable (a queue job's result can arrive twice). */
  has(key: string): boolean {
    return this.saved.has(key);
  }

  /** The files from what the store holds, the invocation closed, the run marked finished when it is. */
  finish(limits: ReturnType<LimiterRegistry["totals"]> | null): BatchResult {
    this.flusher.cancel();
    const { store } = this.deps;
    store.flush(); // before the files show its rows
    const outcomes = loadOutcomes(store, this.runId);
    const remaining = this.file.items.length - outcomes.length;
    const stopped = this.stopped;
    const status: Invocation["status"] = stopped?.status ?? (remaining === 0 ? "finished" : "interrupted");
    Object.assign(this.invocation, {
      finished_at: this.clock.iso(),
      status,
      ...(limits
        ? {
            rate_limited: limits.rate_limited,
            rate_limit_wait_ms: limits.pause_ms,
            min_limit: limits.min_limit,
          }
        : {}),
      peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024),
      error: stopped?.error ? stopped.error.message : null,
    });
    const redact = (text: string) => store.redact(text);
    writeOutputs(outcomes, this.file, this.files, redact);
    writeBatchState(this.out, this.state);
    writeAtomic(this.files.summary, redact(renderSummary(this.state, this.file, outcomes)));
    store.finishBatchRun(this.runId, remaining === 0 ? "finished" : status);
    return {
      state: this.state,
      status,
      outcomes,
      remaining,
      error: stopped?.error ?? null,
      files: this.files,
    };
  }

  private flush(): void {
    try {
      // The rows about to be written out are committed first (runItem leaves them to the group's window).
      this.deps.store.flush();
      const rows = [...this.saved.values()].sort((a, b) => a.index - b.index);
      writeOutputs(rows, this.file, this.files, (t) => this.deps.store.redact(t), this.csvLines);
      this.emit({ type: "flush", rows: rows.length });
      writeBatchState(this.out, this.state);
    } catch (e) {
      this.stopWith(
        "stopped",
        e instanceof PdaError ? e : new PdaError("BATCH_WRITE", `writing ${this.out}: ${errorMessage(e)}`),
      );
    }
  }
}
