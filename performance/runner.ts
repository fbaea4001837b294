/**
 * `pda batch`: run every query of a file through the agent loop, N at a time, unattended, with one shared
 * adaptive rate limiter per provider. Each item's state lives in the store's batch tables and is durable as
 * each query finishes, so a crash or Ctrl-C loses nothing: `--resume` runs only the items not done, and the
 * CSVs (rewritten from the store as queries finish and at the end) hold every query exactly once.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { NO_MEMORY, storeMemory, type LoopDeps, type SessionDriver } from "../agent/index.js";
import type { Budgets, Profile } from "../config/index.js";
import {
  PdaError,
  StoreError,
  errorMessage,
  newId,
  systemClock,
  type AgentSession,
  type Clock,
  type ModelError,
  type ModelProvider,
} from "../core/index.js";
import type { SessionStore } from "../memory/index.js";
import { judgeAnswer, matchExpected, type Verdict } from "./correct.js";
import { QueryDeadline } from "./deadline.js";
import { Flusher, writeAtomic, writeBatchState, writeOutputs } from "./files.js";
import { readQueryFile } from "./input.js";
import { LimitedProvider, type LimitedOptions } from "./limited-provider.js";
import { LimiterRegistry, type LimiterOptions } from "./limiter.js";
import { buildOutcome } from "./outcome.js";
import { loadOutcomes, openRun, toolCallsOf } from "./run-store.js";
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

export interface BatchDeps {
  store: SessionStore;
  /** The providers as created (their own transport retries should be off: the limiter retries). */
  models: { perception: ModelProvider; decision: ModelProvider; judge?: ModelProvider };
  profile: Profile;
  /** A loop with the runtime's deps plus these (e.g. the CLI runtime's `loop`). */
  loop(extra: Partial<LoopDeps>): SessionDriver;
  clock?: Clock;
  newId?: () => string;
}

export interface BatchOptions {
  input: string;
  out: string;
  /** The store's path, kept in batch.json so `--resume` finds the run. */
  db: string;
  /** What --model said, for the summary. */
  model: string;
  concurrency: number;
  resume?: boolean;
  /** Start a new run in a folder that already holds one. */
  force?: boolean;
  /** Per-query timeout; time spent waiting on the rate limiter does not count (default: the profile's). */
  timeoutMs?: number;
  /** Budgets over the profile's, per query. */
  budgets?: Partial<Budgets>;
  judge?: boolean;
  /** Relative tolerance of numeric matches. */
  tolerance?: number;
  /** How human questions are answered (recorded; the loop's NOP ends a query as awaiting_human). */
  hil: string;
  /**
   * Show the agent past sessions (default off, so runs are comparable): only those created before the run
   * started, never the run's own. Resuming keeps the run's setting; a different one is a ConfigError.
   */
  memory?: boolean;
  /** Ctrl-C: stop starting queries, cancel those in flight (they stay pending for --resume). */
  signal?: AbortSignal;
  onEvent?: (e: BatchEvent) => void;
  limiter?: Partial<LimiterOptions>;
  retry?: Omit<LimitedOptions, "clock" | "onWait" | "onRateLimited" | "onRetry" | "onRateLimitGiveUp">;
  /** Shortest interval between incremental CSV rewrites (default 1000 ms). */
  flushMs?: number;
}

export interface Counts {
  total: number;
  done: number;
  failed: number;
  in_flight: number;
  tokens: number;
}

export type BatchEvent =
  | { type: "start"; run_id: string; total: number; already_done: number; to_run: number; resumed: boolean }
  | { type: "item_start"; key: string; index: number; counts: Counts }
  | { type: "item_end"; outcome: ItemOutcome; counts: Counts }
  | { type: "item_pending"; key: string; reason: string; counts: Counts }
  | { type: "rate_limited"; provider: string; delay_ms: number; limit: number }
  | { type: "retry"; provider: string; code: string; attempt: number; delay_ms: number }
  | { type: "stop"; reason: string }
  | { type: "flush"; rows: number };

export interface BatchResult {
  state: BatchState;
  status: Invocation["status"];
  outcomes: ItemOutcome[];
  remaining: number;
  error: PdaError | null;
  files: { queries: string; tools: string; summary: string };
}

export async function runBatch(opts: BatchOptions, deps: BatchDeps): Promise<BatchResult> {
  const clock = deps.clock ?? systemClock;
  const file = readQueryFile(opts.input);
  const out = resolve(opts.out);
  mkdirSync(out, { recursive: true });
  const concurrency = Math.max(1, Math.floor(opts.concurrency));
  const timeoutMs = opts.timeoutMs ?? opts.budgets?.max_wall_ms ?? deps.profile.budgets.max_wall_ms;

  const { state, resumed } = openRun(opts, deps, file, out, clock);
  const runId = state.run_id;
  const memory =
    state.options.memory === true
      ? storeMemory(deps.store, deps.profile.memory_hits, { before: state.created_at })
      : NO_MEMORY;
  const stored = new Map(deps.store.batchItems(runId).map((i) => [i.item_key, i]));
  const todo = file.items.filter((it) => stored.get(it.key)?.status !== "done");
  const invocation: Invocation = {
    started_at: clock.iso(),
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
  state.invocations.push(invocation);
  writeBatchState(out, state);

  const emit = (e: BatchEvent) => opts.onEvent?.(e);
  const counts: Counts = {
    total: file.items.length,
    done: file.items.length - todo.length,
    failed: 0,
    in_flight: 0,
    tokens: 0,
  };
  // Outcomes as saved, for the incremental CSV rewrites (the final write reads them back from the store).
  const saved = new Map(loadOutcomes(deps.store, runId).map((o) => [o.key, o]));
  for (const o of saved.values()) {
    if (o.status !== "succeeded") counts.failed += 1;
    counts.tokens += o.tokens;
  }
  emit({
    type: "start",
    run_id: runId,
    total: counts.total,
    already_done: counts.done,
    to_run: todo.length,
    resumed,
  });

  const limiters = new LimiterRegistry({ maxConcurrent: concurrency, clock, ...opts.limiter });
  const profile: Profile = {
    ...deps.profile,
    // The per-query deadline below replaces the wall budget: unlike the loop's clock it stops while the
    // query waits for the rate limiter, so no query times out because of a rate limit.
    budgets: { ...deps.profile.budgets, ...opts.budgets, max_wall_ms: Number.MAX_SAFE_INTEGER },
  };
  const files = { queries: join(out, QUERY_CSV), tools: join(out, TOOL_CSV), summary: join(out, SUMMARY_MD) };
  const redact = (text: string) => deps.store.redact(text);
  let stop: { status: "interrupted" | "stopped"; error: PdaError | null } | null = null;
  const stopWith = (status: "interrupted" | "stopped", error: PdaError | null) => {
    if (stop) return;
    stop = { status, error };
    emit({ type: "stop", reason: error ? error.message : "interrupted" });
  };
  const flusher = new Flusher(opts.flushMs ?? 1000, () => {
    try {
      const rows = [...saved.values()].sort((a, b) => a.index - b.index);
      writeOutputs(rows, file, files, redact);
      emit({ type: "flush", rows: rows.length });
      writeBatchState(out, state);
    } catch (e) {
      stopWith(
        "stopped",
        e instanceof PdaError ? e : new PdaError("BATCH_WRITE", `writing ${out}: ${errorMessage(e)}`),
      );
    }
  });

  const onAbort = () => stopWith("interrupted", null);
  if (opts.signal?.aborted) onAbort();
  else opts.signal?.addEventListener("abort", onAbort, { once: true });

  const runItem = async (item: QueryItem) => {
    // A row whose process died mid-query (kill -9, a crash) left its session "running": continue that session
    // rather than start a second one for the row.
    const left = stored.get(item.key)?.session_id ?? null;
    const reuse = left !== null && interrupted(deps.store, left);
    const sessionId = reuse ? deps.store.claimInterrupted(left) : (deps.newId ?? newId)();
    const started = clock.now();
    deps.store.saveBatchItem({
      run_id: runId,
      item_key: item.key,
      query: item.query,
      status: "running",
      session_id: sessionId,
      output: null,
      started_at: clock.iso(),
    });
    counts.in_flight += 1;
    emit({ type: "item_start", key: item.key, index: item.index, counts: { ...counts } });

    const deadline = new QueryDeadline(timeoutMs, opts.signal, () => clock.now());
    let rateLimited = 0;
    let gaveUp: ModelError | null = null;
    const wrapped = new Map<ModelProvider, ModelProvider>();
    const wrap = (m: ModelProvider) => {
      let w = wrapped.get(m);
      if (!w) {
        w = new LimitedProvider(m, limiters.for(m.provider), {
          ...opts.retry,
          clock,
          onWait: (waiting) => (waiting ? deadline.pause() : deadline.resume()),
          onRateLimited: (i) => {
            rateLimited += 1;
            emit({ type: "rate_limited", provider: i.provider, delay_ms: i.delayMs, limit: i.limit });
          },
          onRetry: (i) => {
            invocation.transient_retries += 1;
            emit({
              type: "retry",
              provider: i.provider,
              code: i.code,
              attempt: i.attempt,
              delay_ms: i.delayMs,
            });
          },
          onRateLimitGiveUp: (e) => (gaveUp = e),
        });
        wrapped.set(m, w);
      }
      return w;
    };
    const models = { perception: wrap(deps.models.perception), decision: wrap(deps.models.decision) };

    let session: AgentSession | null = null;
    let error: unknown;
    try {
      const loop = deps.loop({ models, signal: deadline.signal, profile, memory });
      session = reuse
        ? await loop.resume(deps.store.getSession(sessionId))
        : await loop.run(item.query, { sessionId, agent: "batch" });
    } catch (e) {
      error = e;
    } finally {
      deadline.dispose();
      counts.in_flight -= 1;
    }

    // Not this query's fault: leave it pending for --resume rather than record a failure.
    const fatal = gaveUp ?? (error instanceof PdaError && error.exitCode >= 2 ? error : null);
    const cancelled = opts.signal?.aborted && session?.status !== "succeeded";
    if (cancelled || fatal) {
      if (fatal) stopWith("stopped", fatal);
      deps.store.saveBatchItem({
        run_id: runId,
        item_key: item.key,
        query: item.query,
        status: "pending",
        session_id: sessionId,
        output: null,
      });
      emit({
        type: "item_pending",
        key: item.key,
        reason: fatal ? errorMessage(fatal) : "interrupted",
        counts: { ...counts },
      });
      return;
    }

    const timedOut = deadline.timedOut;
    let verdict: Verdict | null = null;
    if (item.expected !== null && session?.status === "succeeded" && !timedOut) {
      const answer = session.state.final_answer ?? "";
      verdict = opts.judge
        ? await judge(wrap(deps.models.judge ?? deps.models.decision), item, answer, sessionId)
        : matchExpected(answer, item.expected, { tolerance: opts.tolerance });
    }
    const outcome = buildOutcome({
      item,
      sessionId,
      session,
      error,
      timedOut,
      toolCalls: toolCallsOf(deps.store, sessionId),
      verdict,
      rateLimited,
      durationMs: clock.now() - started,
      finishedAt: clock.iso(),
    });
    deps.store.saveBatchItem({
      run_id: runId,
      item_key: item.key,
      query: item.query,
      status: "done",
      session_id: sessionId,
      output: outcome,
      finished_at: outcome.finished_at,
    });
    saved.set(item.key, outcome);
    invocation.ran += 1;
    counts.done += 1;
    counts.tokens += outcome.tokens;
    if (outcome.status !== "succeeded") counts.failed += 1;
    emit({ type: "item_end", outcome, counts: { ...counts } });
    flusher.request();
  };

  /** The judge's call is logged with the session it judged; a judge that fails falls back to matching. */
  const judge = async (model: ModelProvider, item: QueryItem, answer: string, sessionId: string) => {
    const startedAt = clock.iso();
    const t0 = clock.now();
    try {
      const j = await judgeAnswer(
        model,
        { query: item.query, expected: item.expected!, output: answer },
        opts.signal,
      );
      const u = j.result.usage;
      invocation.judge_tokens += u.input_tokens + u.output_tokens;
      deps.store.recordLlmCall(sessionId, {
        role: "judge",
        provider: j.result.provider,
        model: j.result.model,
        ok: true,
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        latency_ms: j.result.latency_ms,
        attempts: j.result.attempts,
        prompt: j.prompt,
        raw_response: j.result.raw,
        value: j.verdict,
        started_at: startedAt,
      });
      return { correct: j.verdict.correct, by: "judge", reason: j.verdict.reason } satisfies Verdict;
    } catch (e) {
      deps.store.recordLlmCall(sessionId, {
        role: "judge",
        provider: model.provider,
        model: model.model,
        ok: false,
        input_tokens: 0,
        output_tokens: 0,
        latency_ms: clock.now() - t0,
        attempts: 1,
        prompt: "",
        raw_response: "",
        error: errorMessage(e),
        started_at: startedAt,
      });
      const m = matchExpected(answer, item.expected!, { tolerance: opts.tolerance });
      return { ...m, reason: `the judge failed (${errorMessage(e)}); matched instead` };
    }
  };

  const queue = [...todo];
  const worker = async () => {
    while (!stop && queue.length > 0) {
      try {
        await runItem(queue.shift()!);
      } catch (e) {
        // The store or the disk failed: stop everyone; what was saved stays saved.
        stopWith(
          "stopped",
          e instanceof PdaError ? e : new PdaError("BATCH_FAILED", errorMessage(e), { cause: e }),
        );
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, worker));
  } finally {
    opts.signal?.removeEventListener("abort", onAbort);
    flusher.cancel();
  }

  const outcomes = loadOutcomes(deps.store, runId);
  const remaining = file.items.length - outcomes.length;
  const stopped = stop as { status: "interrupted" | "stopped"; error: PdaError | null } | null;
  const status: Invocation["status"] = stopped?.status ?? (remaining === 0 ? "finished" : "interrupted");
  const totals = limiters.totals();
  Object.assign(invocation, {
    finished_at: clock.iso(),
    status,
    rate_limited: totals.rate_limited,
    rate_limit_wait_ms: totals.pause_ms,
    min_limit: totals.min_limit,
    peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024),
    error: stopped?.error ? stopped.error.message : null,
  });
  writeOutputs(outcomes, file, files, redact);
  writeBatchState(out, state);
  writeAtomic(files.summary, redact(renderSummary(state, file, outcomes)));
  deps.store.finishBatchRun(runId, remaining === 0 ? "finished" : status);
  return { state, status, outcomes, remaining, error: stopped?.error ?? null, files };
}

/** Whether a batch row's session was left running by a process that died (false for one never started). */
function interrupted(store: SessionStore, sessionId: string): boolean {
  try {
    return store.displayStatus(sessionId) === "interrupted";
  } catch (e) {
    if (e instanceof StoreError && e.code === "STORE_NOT_FOUND") return false;
    throw e;
  }
}
