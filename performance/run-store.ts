/**
 * A batch run in the store and in its output folder: create or reopen it (batch.json names the run and the
 * store it lives in), and read back what is durable — the done items' outcomes and each session's tool calls.
 */
import { resolve } from "node:path";
import { ConfigError, StoreError, newId, type Clock } from "../core/index.js";
import type { SessionStore, ToolCallRow } from "../memory/index.js";
import { readBatchState } from "./files.js";
import type { QueryFile } from "./input.js";
import type { BatchDeps, BatchOptions } from "./types.js";
import { BatchState, ItemOutcome } from "./schemas.js";

/** Create or reopen the run this folder belongs to. */
export function openRun(
  opts: BatchOptions,
  deps: Pick<BatchDeps, "store" | "newId">,
  file: QueryFile,
  out: string,
  clock: Clock,
): { state: BatchState; resumed: boolean } {
  const existing = readBatchState(out);
  if (existing && opts.resume && !opts.force) {
    if (existing.input_sha256 !== file.sha256) {
      throw new ConfigError(
        `${out} holds run ${existing.run_id} of ${existing.input_file}, and the query file has changed since ` +
          `(sha256 differs); resume with the same file, or start over with --force`,
        { code: "BATCH_RESUME" },
      );
    }
    try {
      deps.store.batchRun(existing.run_id);
    } catch (e) {
      if (!(e instanceof StoreError)) throw e;
      throw new ConfigError(
        `run ${existing.run_id} is not in the store ${opts.db}; it was started with --db ${existing.db}`,
        { code: "BATCH_RESUME", cause: e },
      );
    }
    const recorded = existing.options.memory === true;
    if (opts.memory !== undefined && opts.memory !== recorded) {
      throw new ConfigError(
        `run ${existing.run_id} was started with memory ${recorded ? "on (--memory)" : "off"}; resume it as it ` +
          `was started (leave out --${opts.memory ? "" : "no-"}memory), or start over with --force`,
        { code: "BATCH_RESUME" },
      );
    }
    deps.store.startBatchRun({ id: existing.run_id });
    return { state: existing, resumed: true };
  }
  if (existing && !opts.force) {
    const done = deps.store.batchItems(existing.run_id).filter((i) => i.status === "done").length;
    throw new ConfigError(
      `${out} already holds batch run ${existing.run_id} (${done}/${existing.total} queries done); ` +
        `add --resume to finish it, or --force to start a new run there`,
      { code: "BATCH_EXISTS" },
    );
  }
  const now = clock.iso();
  const state = BatchState.parse({
    $schemaVersion: 1,
    run_id: (deps.newId ?? newId)(),
    db: resolve(opts.db),
    input_file: resolve(file.path),
    input_sha256: file.sha256,
    total: file.items.length,
    model: opts.model,
    hil: opts.hil,
    options: {
      concurrency: opts.concurrency,
      timeout_ms: opts.timeoutMs ?? null,
      budgets: opts.budgets ?? {},
      judge: !!opts.judge,
      tolerance: opts.tolerance ?? null,
      memory: opts.memory === true,
      // Memory's cutoff: sessions created before it, i.e. before this run (null: no memory).
      memory_before: opts.memory === true ? now : null,
    },
    created_at: now,
    invocations: [],
  });
  deps.store.startBatchRun({
    id: state.run_id,
    input_file: state.input_file,
    options: { ...state.options, hil: opts.hil, model: opts.model, out },
  });
  // The rows in one transaction and one COMMIT, not one each (a file of 1000 queries made 1000).
  deps.store.batch(() => {
    for (const it of file.items) {
      deps.store.saveBatchItem(
        {
          run_id: state.run_id,
          item_key: it.key,
          query: it.query,
          status: "pending",
          session_id: null,
          output: null,
        },
        { durable: false },
      );
    }
  });
  deps.store.flush();
  return { state, resumed: false };
}

/** The done items' outcomes, validated as they come back from the store, in input order. */
export function loadOutcomes(store: SessionStore, runId: string): ItemOutcome[] {
  return store
    .batchItems(runId)
    .filter((i) => i.status === "done")
    .map((i) => {
      const parsed = ItemOutcome.safeParse(i.output);
      if (!parsed.success) {
        throw new StoreError(
          "STORE_CORRUPT",
          `batch run ${runId}, item ${i.item_key}: stored outcome is invalid: ${parsed.error.issues[0]?.message}`,
        );
      }
      return parsed.data;
    })
    .sort((a, b) => a.index - b.index);
}

/** The tool calls the store logged for a session, in order ([] for a session never started). */
export function toolCallsOf(store: SessionStore, sessionId: string): ToolCallRow[] {
  try {
    return store.toolCalls({ session_id: sessionId, limit: 1_000_000 });
  } catch (e) {
    if (e instanceof StoreError && e.code === "STORE_NOT_FOUND") return [];
    throw e;
  }
}
