/**
 * `pda batch`: run every query of a file through the agent loop, N at a time, unattended, with one shared
 * adaptive rate limiter per provider. Each item's state lives in the store's batch tables and is durable as
 * each query finishes, so a crash or Ctrl-C loses nothing: `--resume` runs only the items not done, and the
 * CSVs (rewritten from the store as queries finish and at the end) hold every query exactly once.
 */
import { NO_MEMORY, storeMemory } from "../agent/index.js";
import { PdaError, StoreError, errorMessage, newId } from "../core/index.js";
import type { SessionStore } from "../memory/index.js";
import { RunLedger } from "./ledger.js";
import { LimiterRegistry } from "./limiter.js";
import { queryProfile, runQuery, type QueryContext } from "./query.js";
import type { QueryItem } from "./schemas.js";
import type { BatchDeps, BatchOptions, BatchResult } from "./types.js";

/**
 * The store's group-commit window for batch runs and queue workers (memory's SessionStoreOptions): ~20 writes
 * a query at 16 at once share transactions, and a crash loses at most this long of the steps in flight (a row
 * is committed as it is saved).
 */
export const BATCH_GROUP_COMMIT_MS = 50;

export async function runBatch(opts: BatchOptions, deps: BatchDeps): Promise<BatchResult> {
  const run = new RunLedger(opts, deps);
  const limiters = new LimiterRegistry({
    maxConcurrent: run.invocation.concurrency,
    clock: run.clock,
    ...opts.limiter,
  });
  const ctx = queryContext(opts, deps, run, limiters);
  const onAbort = () => run.stopWith("interrupted", null);
  if (opts.signal?.aborted) onAbort();
  else opts.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await pool(run.todo, run.invocation.concurrency, run, (item) => runItem(item, ctx, run, deps));
  } finally {
    opts.signal?.removeEventListener("abort", onAbort);
  }
  return run.finish(limiters.totals());
}

/** What every query of this invocation shares. */
export function queryContext(
  opts: BatchOptions,
  deps: BatchDeps,
  run: RunLedger,
  limiters: LimiterRegistry,
): QueryContext {
  const memory =
    run.state.options.memory === true
      ? storeMemory(deps.store, deps.profile.memory_hits, { before: run.state.created_at })
      : NO_MEMORY;
  return {
    store: deps.store,
    recorder: deps.recorder ?? deps.store,
    models: deps.models,
    profile: queryProfile(deps.profile, opts.budgets),
    loop: deps.loop,
    memory,
    limiters,
    timeoutMs: opts.timeoutMs ?? opts.budgets?.max_wall_ms ?? deps.profile.budgets.max_wall_ms,
    judge: !!opts.judge,
    tolerance: opts.tolerance,
    retry: opts.retry,
    signal: opts.signal,
    clock: run.clock,
    onEvent: (e) => run.emit(e),
  };
}

/** `concurrency` loops taking items in order until none is left or the run stops. */
async function pool(
  items: QueryItem[],
  concurrency: number,
  run: RunLedger,
  each: (item: QueryItem) => Promise<void>,
): Promise<void> {
  const queue = [...items];
  const loop = async () => {
    while (!run.stop && queue.length > 0) {
      try {
        await each(queue.shift()!);
      } catch (e) {
        // The store or the disk failed: stop everyone; what was saved stays saved.
        run.stopWith(
          "stopped",
          e instanceof PdaError ? e : new PdaError("BATCH_FAILED", errorMessage(e), { cause: e }),
        );
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, loop));
}

/** One row: marked running (with its session) before the query starts, done or pending after. */
async function runItem(item: QueryItem, ctx: QueryContext, run: RunLedger, deps: BatchDeps): Promise<void> {
  const store = deps.store;
  const session = sessionFor(store, run.lastSession.get(item.key) ?? null, deps.newId ?? newId);
  const save = (status: "running" | "pending" | "done", extra: object = {}) =>
    store.saveBatchItem(
      {
        run_id: run.runId,
        item_key: item.key,
        query: item.query,
        status,
        session_id: session.id,
        output: null,
        ...extra,
      },
      // "running" and "done" wait for the group commit's window (≤ BATCH_GROUP_COMMIT_MS) rather than
      // commit at once: a COMMIT per query was the store's largest CPU cost in a batch. Rows commit in the
      // order they were written, so a session's rows never outlive its "running" row, and a crash loses at
      // most the window's finished rows, run again by --resume (their sessions are in the same window or
      // finished, never continued twice). The ledger commits before it rewrites the CSVs, so they never show
      // a row the store might lose.
      { durable: status === "pending" },
    );
  save("running", { started_at: run.clock.iso() });
  run.started(item);
  const r = await runQuery(item, session, ctx);
  if (r.kind === "pending") {
    if (r.fatal) run.stopWith("stopped", r.fatal);
    save("pending");
    run.leftPending(item.key, r.reason);
    return;
  }
  save("done", { output: r.outcome, finished_at: r.outcome.finished_at });
  run.recorded(r.outcome, r.judgeTokens);
}

/**
 * The row's session: a new one, or the one its process left "running" when it died mid-query (kill -9, a
 * crash), continued rather than run a second time beside it.
 */
function sessionFor(
  store: SessionStore,
  left: string | null,
  makeId: () => string,
): { id: string; resume: boolean } {
  if (left !== null && interrupted(store, left)) return { id: store.claimInterrupted(left), resume: true };
  return { id: makeId(), resume: false };
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
