/**
 * `pda batch --queue`: enqueue the run's queries as BullMQ jobs, then wait for the workers' results and
 * adopt each into this store (the session, its tool and model calls, the row) in one transaction, so the
 * store holds every session of the run and the CSVs come from the same rows as a local run. A result that
 * arrives twice (a job taken again after its worker stalled) is adopted once; a submitter that died is
 * re-attached by `--resume`, which enqueues nothing twice (the job ids are the run's row ids).
 */
import type { JobType, Queue, QueueEvents } from "bullmq";
import { ConfigError, PdaError, errorMessage } from "../core/index.js";
import type { SessionStore } from "../memory/index.js";
import { RunLedger } from "./ledger.js";
import { BATCH_GROUP_COMMIT_MS } from "./runner.js";
import { buildOutcome } from "./outcome.js";
import {
  JOB_PROTOCOL,
  JobResult,
  PDA_VERSION,
  QUEUE_NAME,
  connectRedis,
  jobId,
  type JobPayload,
  type JobSetup,
  storeHas,
} from "./queue-job.js";
import type { ItemOutcome, QueryItem } from "./schemas.js";
import type { BatchDeps, BatchOptions, BatchResult } from "./types.js";

export interface QueueOptions extends BatchOptions {
  /** redis://host[:port][/db] */
  queue: string;
  setup: Omit<JobSetup, "timeout_ms" | "concurrency" | "budgets" | "judge" | "tolerance" | "hil">;
  /** How often job states are read back besides the event stream (default 2000 ms). */
  sweepMs?: number;
}

/** Jobs are attempted this often when a worker throws (a stalled job is taken again regardless). */
const ATTEMPTS = 3;

/** Every list a job can be in: a pending job in none of them is gone from Redis. */
const ANY_STATE: JobType[] = [
  "active",
  "completed",
  "failed",
  "delayed",
  "prioritized",
  "waiting",
  "waiting-children",
];

export async function runQueued(
  opts: QueueOptions,
  deps: Pick<BatchDeps, "store" | "clock" | "newId">,
): Promise<BatchResult> {
  if (opts.memory) {
    throw new ConfigError(
      "--memory does not work with --queue: each worker's store holds other sessions; leave it out",
    );
  }
  // Connect before the run is opened: an unreachable Redis changes nothing on disk.
  const connection = await connectRedis(opts.queue);
  // BullMQ loads here, on the queue path only: `pda run` and a local batch never pay for it.
  const { Queue, QueueEvents } = await import("bullmq");
  const queue = new Queue(QUEUE_NAME, { connection });
  // QueueEvents blocks on its connection, so it gets its own; BullMQ leaves connections it was given open.
  const eventsConnection = connection.duplicate();
  const events = new QueueEvents(QUEUE_NAME, { connection: eventsConnection });
  queue.on("error", () => {});
  events.on("error", () => {});
  let run: RunLedger | undefined;
  try {
    await events.waitUntilReady();
    run = new RunLedger(opts, deps);
    await new Attachment(run, opts, deps.store, queue, events).wait();
  } catch (e) {
    if (!run) throw e;
    run.stopWith("stopped", e instanceof PdaError ? e : new PdaError("BATCH_FAILED", errorMessage(e)));
  } finally {
    await events.close().catch(() => {});
    await queue.close().catch(() => {});
    eventsConnection.disconnect();
    connection.disconnect();
  }
  return run.finish(null);
}

/** One submitter attached to its run's jobs until every row is adopted or it is stopped. */
class Attachment {
  private readonly byJob = new Map<string, QueryItem>();
  private readonly active = new Set<string>();
  /** Results adopted but not yet committed (see adopt). */
  private readonly held = new Map<
    string,
    { item: QueryItem; outcome: ItemOutcome; result: JobResult | null }
  >();
  private commitTimer?: NodeJS.Timeout;
  private settle: (() => void) | null = null;

  constructor(
    private readonly run: RunLedger,
    private readonly opts: QueueOptions,
    private readonly store: SessionStore,
    private readonly queue: Queue,
    private readonly events: QueueEvents,
  ) {
    for (const item of run.todo) this.byJob.set(jobId(run.runId, item), item);
  }

  async wait(): Promise<void> {
    const ids = this.byJob;
    const ours = (id: string) => ids.has(id);
    this.events.on("active", ({ jobId: id }) => ours(id) && this.markActive(id));
    // The event carries the result: adopted from it, without reading the job back (a round trip and the
    // result's bytes again per query).
    this.events.on(
      "completed",
      ({ jobId: id, returnvalue }) => ours(id) && void this.checkOrStop(id, { returnvalue }),
    );
    this.events.on("failed", ({ jobId: id }) => ours(id) && void this.checkOrStop(id));
    this.events.on("progress", ({ jobId: id, data }) => ours(id) && this.note(id, data));
    await this.enqueue();
    const onAbort = () => {
      this.run.stopWith("interrupted", null);
      this.settle?.();
    };
    if (this.opts.signal?.aborted) return onAbort();
    this.opts.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      await this.sweepUntilDone();
    } finally {
      this.opts.signal?.removeEventListener("abort", onAbort);
      // Stopped or done: what is held is committed now, not left to a timer that outlives the run.
      await this.commitOrStop();
    }
    if (this.pending() === 0) await this.cleanUp();
  }

  /** One job per row not done; an id already in the queue (a resumed run) is left as it is. */
  private async enqueue(): Promise<void> {
    const jobs = [...this.byJob].map(([id, item]) => this.job(id, item));
    for (let i = 0; i < jobs.length; i += 500) await this.queue.addBulk(jobs.slice(i, i + 500));
  }

  /** The run's setup is fixed here, at submission: every worker runs the row the same way or refuses it. */
  private job(id: string, item: QueryItem) {
    const o = this.opts;
    const data: JobPayload = {
      protocol: JOB_PROTOCOL,
      pda_version: PDA_VERSION,
      run_id: this.run.runId,
      item,
      setup: {
        ...o.setup,
        timeout_ms: o.timeoutMs ?? null,
        concurrency: this.run.invocation.concurrency,
        budgets: (o.budgets ?? {}) as Record<string, number>,
        judge: !!o.judge,
        tolerance: o.tolerance ?? null,
        hil: o.hil,
      },
    };
    const opts = { jobId: id, attempts: ATTEMPTS, backoff: { type: "fixed", delay: 1000 } };
    return { name: "query", data, opts };
  }

  /** Read every pending job's state now and then: events can be missed (a reconnect, a resumed run). */
  private async sweepUntilDone(): Promise<void> {
    const every = this.opts.sweepMs ?? 2000;
    while (!this.run.stop && this.pending() > 0) {
      // Three reads of the queue's id lists per sweep, not one state read per pending job: a run's pending jobs
      // are many, the active and finished ones not yet adopted few. Each read is one atomic script, so a job is
      // in one of the lists of the last read unless it is gone from Redis.
      const active = await this.queue.getRanges(["active"], 0, -1);
      for (const id of active) if (this.byJob.has(id)) this.markActive(id);
      for (const id of await this.queue.getRanges(["completed", "failed"], 0, -1)) {
        if (this.run.stop) return;
        if (this.byJob.has(id)) await this.check(id);
      }
      if (this.run.stop) return;
      const known = new Set(await this.queue.getRanges(ANY_STATE, 0, -1));
      for (const id of [...this.byJob.keys()]) {
        if (this.run.stop) return;
        if (this.byJob.has(id) && !known.has(id)) await this.enqueueAgain(id);
      }
      await new Promise<void>((resolve) => {
        this.settle = resolve;
        setTimeout(resolve, every).unref();
      });
      this.settle = null;
    }
  }

  private pending(): number {
    return this.byJob.size;
  }

  private markActive(id: string): void {
    const item = this.byJob.get(id);
    if (!item || this.active.has(id)) return;
    this.active.add(id);
    this.run.started(item);
  }

  /** A worker's note (it refused or put the job back), shown once per distinct text. */
  private note(id: string, data: unknown): void {
    const item = this.byJob.get(id);
    const d = data as { worker?: unknown; note?: unknown } | null;
    if (!item || typeof d?.note !== "string") return;
    // Put back: no longer in flight until a worker takes it again.
    if (this.active.delete(id)) this.run.counts.in_flight = Math.max(0, this.run.counts.in_flight - 1);
    this.run.emit({ type: "worker_note", worker: String(d.worker ?? "?"), key: item.key, message: d.note });
  }

  /** From an event handler: a store that fails stops the run (what was adopted stays adopted). */
  private async checkOrStop(id: string, completed?: { returnvalue: unknown }): Promise<void> {
    try {
      await this.check(id, completed);
    } catch (e) {
      this.run.stopWith("stopped", e instanceof PdaError ? e : new PdaError("BATCH_FAILED", errorMessage(e)));
      this.settle?.();
    }
  }

  /**
   * A job that ended: adopt its result, or its failure once no attempt is left, exactly once. `completed` is
   * the completed event's result; without it the job is read back to learn its state.
   */
  private async check(id: string, completed?: { returnvalue: unknown }): Promise<void> {
    const item = this.byJob.get(id);
    if (!item || this.held.has(id)) return;
    if (completed) this.adoptReturned(item, completed.returnvalue);
    else {
      const job = await this.queue.getJob(id);
      if (!job) return;
      const state = await job.getState();
      if (state === "failed") {
        this.adopt(item, failedRow(item, job.failedReason ?? "failed", this.run.clock.iso()), null);
      } else if (state === "completed") this.adoptReturned(item, job.returnvalue);
    }
  }

  private adoptReturned(item: QueryItem, returnvalue: unknown): void {
    const parsed = JobResult.safeParse(returnvalue);
    if (parsed.success) this.adopt(item, parsed.data.outcome, parsed.data);
    else {
      const issue = parsed.error.issues[0];
      const reason = `the worker's result is invalid: ${issue?.path.join(".")}: ${issue?.message}`;
      this.adopt(item, failedRow(item, reason, this.run.clock.iso()), null);
    }
  }

  /**
   * Held for the window's one transaction (a second delivery of the same job finds it held or its row done);
   * its job leaves Redis only after that commit, so a submitter that dies first adopts it on --resume.
   */
  private adopt(item: QueryItem, outcome: ItemOutcome, result: JobResult | null): void {
    const id = jobId(this.run.runId, item);
    if (!this.byJob.has(id) || this.held.has(id) || this.run.has(item.key)) return;
    this.held.set(id, { item, outcome, result });
    if (this.held.size === 1)
      this.commitTimer = setTimeout(() => void this.commitOrStop(), BATCH_GROUP_COMMIT_MS);
  }

  private async commitOrStop(): Promise<void> {
    try {
      await this.commitHeld();
    } catch (e) {
      this.run.stopWith("stopped", e instanceof PdaError ? e : new PdaError("BATCH_FAILED", errorMessage(e)));
      this.settle?.();
    }
  }

  /**
   * The held results in this store in one transaction (one commit for the window's rows, not one each), then
   * counted, then their jobs removed from Redis.
   */
  private async commitHeld(): Promise<void> {
    clearTimeout(this.commitTimer);
    const held = [...this.held];
    this.held.clear();
    if (held.length === 0) return;
    this.store.batch(() => {
      for (const [, h] of held) adoptResult(this.store, this.run.runId, h.item, h.outcome, h.result);
    });
    for (const [id, h] of held) {
      this.byJob.delete(id);
      this.run.recorded(h.outcome, h.result?.judge_tokens ?? 0, {
        worker: h.result?.worker,
        wasInFlight: this.active.delete(id),
      });
    }
    if (this.pending() === 0) this.settle?.();
    await Promise.all(held.map(([id]) => this.queue.remove(id).catch(() => 0)));
  }

  /** Gone from Redis without a row here (Redis was flushed, or it was removed by hand): add it again. */
  private async enqueueAgain(id: string): Promise<void> {
    const j = this.job(id, this.byJob.get(id)!);
    await this.queue.add(j.name, j.data, j.opts);
  }

  /** Results adopted before a crash left their jobs behind: remove the run's leftovers. */
  private async cleanUp(): Promise<void> {
    for (const item of this.run.file.items)
      await this.queue.remove(jobId(this.run.runId, item)).catch(() => 0);
  }
}

/**
 * The worker's session, its tool and model calls and the row, in this store in one transaction; a session
 * this store already holds (the worker shares the store) is not copied again.
 */
export function adoptResult(
  store: SessionStore,
  runId: string,
  item: QueryItem,
  outcome: ItemOutcome,
  result: JobResult | null,
): void {
  // One IMMEDIATE transaction whose writes join it directly (store.batch), not a savepoint per row written.
  store.batch(() => {
    const session = result?.session ?? null;
    if (session && !storeHas(store, session.session_id)) {
      // finishSession inserts the session with all its rows; a startSession first would write it twice.
      store.finishSession(session);
      for (const c of result!.tool_calls) store.recordToolCall(session.session_id, c.step_index, c);
      for (const c of result!.llm_calls) store.recordLlmCall(session.session_id, c);
    }
    store.saveBatchItem({
      run_id: runId,
      item_key: item.key,
      query: item.query,
      status: "done",
      session_id: outcome.session_id || null,
      output: outcome,
      finished_at: outcome.finished_at,
    });
  });
}

function failedRow(item: QueryItem, reason: string, finishedAt: string): ItemOutcome {
  return buildOutcome({
    item,
    sessionId: "",
    session: null,
    error: new Error(reason),
    timedOut: false,
    toolCalls: [],
    verdict: null,
    rateLimited: 0,
    durationMs: 0,
    finishedAt,
  });
}
