/**
 * `pda worker`: take batch jobs from the BullMQ queue and run each query as a normal session in this
 * worker's own store, then send back the row, the session export and its tool and model calls as the job's
 * result. A job this worker cannot run as submitted (another pda, another setup) is put back for another
 * worker, with a note the submitter shows; a job that is not a valid pda job fails with the reason.
 */
import { hostname } from "node:os";
import type { Job } from "bullmq";
import { NO_MEMORY } from "../agent/index.js";
import type { Profile } from "../config/index.js";
import { errorMessage, newId, systemClock, type Clock } from "../core/index.js";
import type { HumanChannel } from "../hil/index.js";
import type { SessionStore } from "../memory/index.js";
import { queryProfile, runQuery, type QueryContext } from "./query.js";
import {
  JOB_PROTOCOL,
  JobHeader,
  JobPayload,
  JobResult,
  PDA_VERSION,
  QUEUE_NAME,
  connectRedis,
  setupDifference,
  type JobSetup,
  storeHas,
} from "./queue-job.js";
import { SharedLimiters, type SharedLimiterOptions } from "./shared-limiter.js";
import type { BatchDeps, BatchEvent, BatchModels, RetryOptions } from "./types.js";

export interface WorkerOptions {
  queue: string;
  concurrency: number;
  /** How long a job's lock lives without renewal: a killed worker's jobs are taken again after about this. */
  stallMs: number;
  /** How this worker is named in job results and notes (default host:pid). */
  name?: string;
  /** Stop taking jobs; queries in flight are cancelled and their jobs put back for another worker. */
  signal: AbortSignal;
  onEvent?: (e: WorkerEvent) => void;
  limiter?: Partial<Omit<SharedLimiterOptions, "maxConcurrent">>;
  retry?: RetryOptions;
}

export interface WorkerDeps {
  store: SessionStore;
  /** Where the judge's call is logged (default: the store). */
  recorder?: BatchDeps["recorder"];
  loop: BatchDeps["loop"];
  /** The models and profile a job's setup names, as this worker's config resolves them; throws when it cannot. */
  setupFor(setup: JobSetup): { models: BatchModels; profile: Profile; fingerprint: JobSetup["fingerprint"] };
  /** Who answers the agent's questions for a job's --hil. */
  human(spec: string): HumanChannel;
  clock?: Clock;
}

export type WorkerEvent =
  | { type: "ready"; name: string; concurrency: number }
  | { type: "job_start"; run_id: string; key: string }
  | { type: "job_end"; run_id: string; key: string; status: string; duration_ms: number }
  | { type: "job_put_back"; key: string; reason: string }
  | { type: "job_failed"; key: string; reason: string }
  | { type: "batch"; event: BatchEvent };

/** Runs until `signal` aborts; resolves once the worker has let go of its jobs. */
export async function runWorker(opts: WorkerOptions, deps: WorkerDeps): Promise<void> {
  const name = opts.name ?? `${hostname()}:${process.pid}`;
  const clock = deps.clock ?? systemClock;
  const emit = (e: WorkerEvent) => opts.onEvent?.(e);
  // BullMQ loads here, on the queue path only: `pda run` and a local batch never pay for it.
  const { DelayedError, UnrecoverableError, Worker } = await import("bullmq");
  const connection = await connectRedis(opts.queue);
  // The providers' limits live in Redis, shared with every other worker; one set per run's --concurrency.
  const limiterConnection = connection.duplicate();
  const limiterSets = new Map<number, SharedLimiters>();
  const limitersFor = (maxConcurrent: number): SharedLimiters => {
    let l = limiterSets.get(maxConcurrent);
    if (!l) {
      // A slot held by a worker that died frees itself when its jobs are taken again.
      const leaseMs = opts.stallMs;
      l = new SharedLimiters(limiterConnection, { maxConcurrent, clock, leaseMs, ...opts.limiter });
      limiterSets.set(maxConcurrent, l);
    }
    return l;
  };

  const processor = async (job: Job, token?: string): Promise<JobResult> => {
    const key = typeof job.data?.item?.key === "string" ? (job.data.item.key as string) : String(job.id);
    const refused = refusal(job.data, name);
    if (refused) return putBack(job, token, key, refused);
    const parsed = JobPayload.safeParse(job.data);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const reason = `invalid job payload: ${issue?.path.join(".") || "(root)"}: ${issue?.message}`;
      emit({ type: "job_failed", key, reason });
      throw new UnrecoverableError(reason);
    }
    const p = parsed.data;
    let chosen: ReturnType<WorkerDeps["setupFor"]>;
    try {
      chosen = deps.setupFor(p.setup);
    } catch (e) {
      return putBack(
        job,
        token,
        key,
        `worker ${name} cannot set up the run's models and profile: ${errorMessage(e)}`,
      );
    }
    const diff = setupDifference(p.setup.fingerprint, chosen.fingerprint);
    if (diff) return putBack(job, token, key, `worker ${name} refuses the job: ${diff}`);

    const human = deps.human(p.setup.hil);
    const ctx: QueryContext = {
      store: deps.store,
      recorder: deps.recorder ?? deps.store,
      models: chosen.models,
      profile: queryProfile(chosen.profile, p.setup.budgets),
      loop: (extra) => deps.loop({ ...extra, human }),
      memory: NO_MEMORY,
      limiters: limitersFor(p.setup.concurrency),
      timeoutMs: p.setup.timeout_ms ?? p.setup.budgets.max_wall_ms ?? chosen.profile.budgets.max_wall_ms,
      judge: p.setup.judge,
      tolerance: p.setup.tolerance ?? undefined,
      retry: opts.retry,
      signal: opts.signal,
      clock,
      onEvent: (event) => emit({ type: "batch", event }),
    };
    emit({ type: "job_start", run_id: p.run_id, key });
    const sessionId = newId();
    const r = await runQuery(p.item, { id: sessionId, resume: false }, ctx);
    if (r.kind === "pending") return putBack(job, token, key, `worker ${name}: ${r.reason}`);
    emit({
      type: "job_end",
      run_id: p.run_id,
      key,
      status: r.outcome.status,
      duration_ms: r.outcome.duration_ms,
    });
    // Typed, not parsed again here: the submitter validates every result it adopts.
    const stored = storeHas(deps.store, sessionId);
    const result: JobResult = {
      protocol: JOB_PROTOCOL,
      worker: name,
      outcome: r.outcome,
      session: stored ? deps.store.getSession(sessionId) : null,
      tool_calls: r.toolCalls,
      llm_calls: stored ? deps.store.llmCalls(sessionId) : [],
      judge_tokens: r.judgeTokens,
    };
    return result;
  };

  /** Back to the queue for another worker (or this one, later), not counted as an attempt. */
  const putBack = async (
    job: Job,
    token: string | undefined,
    key: string,
    reason: string,
  ): Promise<never> => {
    emit({ type: "job_put_back", key, reason });
    await job.updateProgress({ worker: name, note: reason });
    await job.moveToDelayed(Date.now() + (opts.signal.aborted ? 0 : 2000), token);
    throw new DelayedError();
  };

  const worker = new Worker(QUEUE_NAME, processor, {
    connection,
    concurrency: opts.concurrency,
    name,
    lockDuration: opts.stallMs,
    stalledInterval: opts.stallMs,
    // A job whose worker died is taken again; one that kills every worker that takes it fails in the end.
    maxStalledCount: 3,
  });
  worker.on("error", () => {}); // connection blips: ioredis reconnects, BullMQ carries on
  await worker.waitUntilReady();
  emit({ type: "ready", name, concurrency: opts.concurrency });
  await new Promise<void>((resolve) => {
    if (opts.signal.aborted) resolve();
    else opts.signal.addEventListener("abort", () => resolve(), { once: true });
  });
  // The aborted queries end quickly and put their jobs back; then the locks are released.
  await worker.close();
  limiterConnection.disconnect();
  connection.disconnect();
}

/** Why this worker will not run the job at all (another protocol or pda version), or null. */
function refusal(data: unknown, name: string): string | null {
  const header = JobHeader.safeParse(data);
  if (!header.success) return null; // not even a header: fails validation below, with the reason
  const h = header.data;
  if (h.protocol === JOB_PROTOCOL && h.pda_version === PDA_VERSION) return null;
  return (
    `worker ${name} runs pda ${PDA_VERSION} (job protocol ${JOB_PROTOCOL}); ` +
    `the job was submitted by pda ${h.pda_version} (protocol ${h.protocol})`
  );
}
