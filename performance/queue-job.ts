/**
 * What goes through Redis when a batch runs on queue workers: the job a submitter enqueues per query (the
 * run's setup fixed at submission) and the result a worker sends back (the row, the session export and its
 * tool and model calls), the job ids, and the connection to Redis. One schema, one type.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Redis, RedisOptions } from "ioredis";
import { z } from "zod";
import type { Profile } from "../config/index.js";
import {
  AgentSession,
  ConfigError,
  LlmCallRecord,
  PACKAGE_ROOT,
  PdaError,
  StoreError,
  errorMessage,
} from "../core/index.js";
import { ToolCallRow, type SessionStore } from "../memory/index.js";
import { ItemOutcome, QueryItem } from "./schemas.js";

/** The one BullMQ queue every run's jobs go to (workers serve all runs; job ids carry the run). */
export const QUEUE_NAME = "pda-batch";
/** Bumped when the job or result shape changes: a worker refuses jobs of another protocol. */
export const JOB_PROTOCOL = 2;

export const PDA_VERSION: string = (
  JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string }
).version;

/** The setup a run is submitted with; a worker must run the query the same way or refuse it. */
export const JobSetup = z.object({
  /** --model as given (null: models.yaml's choice). */
  model: z.string().nullable(),
  /** --profile as given (null: the default profile). */
  profile: z.string().nullable(),
  /** What each role resolves to and a hash of the resolved profile (see setupFingerprint). */
  fingerprint: z.object({ models: z.array(z.string()), profile_sha256: z.string() }),
  timeout_ms: z.number().int().positive().nullable(),
  /**
   * The run's --concurrency: the most model calls in flight to each provider across every worker, the
   * limit a local run of the same --concurrency keeps (the workers share it through Redis).
   */
  concurrency: z.number().int().positive(),
  budgets: z.record(z.string(), z.number()),
  judge: z.boolean(),
  tolerance: z.number().nullable(),
  hil: z.string(),
});
export type JobSetup = z.infer<typeof JobSetup>;

/** Read first, loosely, so a job of another pda is refused by name rather than failed as invalid. */
export const JobHeader = z.object({ protocol: z.number(), pda_version: z.string() });

export const JobPayload = JobHeader.extend({
  protocol: z.literal(JOB_PROTOCOL),
  run_id: z.string().min(1),
  item: QueryItem,
  setup: JobSetup,
});
export type JobPayload = z.infer<typeof JobPayload>;

export const JobResult = z.object({
  protocol: z.literal(JOB_PROTOCOL),
  worker: z.string(),
  outcome: ItemOutcome,
  /** The session as the worker's store holds it (null: the loop failed before it started one). */
  session: AgentSession.nullable(),
  tool_calls: z.array(ToolCallRow),
  llm_calls: z.array(LlmCallRecord),
  judge_tokens: z.number().int(),
});
export type JobResult = z.infer<typeof JobResult>;

/** A re-submit of the same run's row gets the same id, which BullMQ does not add twice. */
export function jobId(runId: string, item: Pick<QueryItem, "index">): string {
  return `${runId}-row${item.index + 1}`;
}

/** The models each role resolves to and the resolved profile, as a worker can compare them. */
export function setupFingerprint(
  models: Array<{ role: string; spec: string; model: string; settings: unknown }>,
  profile: Profile,
): JobSetup["fingerprint"] {
  return {
    models: models.map((m) => `${m.role} ${m.spec} (${m.model}) ${JSON.stringify(m.settings)}`),
    profile_sha256: createHash("sha256").update(JSON.stringify(profile)).digest("hex"),
  };
}

/** Why this worker's setup differs from the job's, or null when it is the same. */
export function setupDifference(job: JobSetup["fingerprint"], here: JobSetup["fingerprint"]): string | null {
  const theirs = job.models.join("; ");
  const ours = here.models.join("; ");
  if (theirs !== ours) return `the run's models are ${theirs}; here they resolve to ${ours}`;
  if (job.profile_sha256 !== here.profile_sha256)
    return "the run's profile (budgets, limits, redaction) differs from this worker's config";
  return null;
}

/** `redis://[user:password@]host[:port][/db]` as ioredis options. */
export function redisOptions(url: string): RedisOptions {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ConfigError(`--queue ${url}: expected redis://host[:port][/db]`);
  }
  if (u.protocol !== "redis:" && u.protocol !== "rediss:")
    throw new ConfigError(`--queue ${url}: expected redis://host[:port][/db]`);
  const db = u.pathname.replace(/^\//, "");
  if (db !== "" && !/^\d+$/.test(db)) throw new ConfigError(`--queue ${url}: the database must be a number`);
  return {
    host: u.hostname || "127.0.0.1",
    port: u.port ? Number(u.port) : 6379,
    db: db ? Number(db) : 0,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.protocol === "rediss:" ? { tls: {} } : {}),
    // BullMQ's workers block on Redis: a command must wait for a reconnect rather than fail.
    maxRetriesPerRequest: null,
  };
}

/** The address without a password, for messages. */
export function redisAddress(url: string): string {
  const o = redisOptions(url);
  return `redis://${o.host}:${o.port}/${o.db}`;
}

/**
 * Connect, or throw exit 3 naming the address and the cause within `timeoutMs`. BullMQ itself would retry
 * an unreachable Redis forever; the check makes a typo a clear error.
 */
export async function connectRedis(url: string, timeoutMs = 4000): Promise<Redis> {
  const options = redisOptions(url);
  // ioredis loads here, on the queue path only.
  const { Redis } = await import("ioredis");
  let cause: unknown = null;
  const probe = new Redis({
    ...options,
    lazyConnect: true,
    connectTimeout: timeoutMs,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  });
  probe.on("error", (e) => (cause = e));
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      probe.connect().then(() => probe.ping()),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer in ${timeoutMs / 1000} s`)), timeoutMs);
      }),
    ]);
  } catch (e) {
    throw new PdaError("QUEUE_UNREACHABLE", `Redis at ${redisAddress(url)}: ${errorMessage(cause ?? e)}`, {
      cause: cause ?? e,
      exitCode: 3,
    });
  } finally {
    clearTimeout(timer);
    probe.disconnect();
  }
  return new Redis(options);
}

/** Whether the store holds a session of this id (a worker's or an adopted one). */
export function storeHas(store: Pick<SessionStore, "resolveId">, id: string): boolean {
  try {
    store.resolveId(id);
    return true;
  } catch (e) {
    if (e instanceof StoreError && e.code === "STORE_NOT_FOUND") return false;
    throw e;
  }
}
