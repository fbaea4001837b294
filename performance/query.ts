/**
 * One query of a batch as one agent session: its models wrapped in the shared rate limiter, a deadline that
 * stops while the limiter makes it wait, the expected-answer check (or judge), and the row's outcome. Used
 * by the local runner and by a queue worker alike, so both produce the same rows.
 */
import type { LoopDeps } from "../agent/index.js";
import type { Profile } from "../config/index.js";
import {
  PdaError,
  type AgentSession,
  type Clock,
  type ModelError,
  type SessionRecorder,
} from "../core/index.js";
import type { ModelProvider } from "../core/index.js";
import type { SessionStore, ToolCallRow } from "../memory/index.js";
import { matchExpected, type Verdict } from "./correct.js";
import { QueryDeadline } from "./deadline.js";
import { judge } from "./judge.js";
import { LimitedProvider } from "./limited-provider.js";
import type { Limiters } from "./limiter.js";
import { buildOutcome } from "./outcome.js";
import { toolCallsOf } from "./run-store.js";
import type { ItemOutcome, QueryItem } from "./schemas.js";
import type { BatchDeps, BatchEvent, BatchModels, RetryOptions } from "./types.js";

/** What every query of a run shares. */
export interface QueryContext {
  store: SessionStore;
  /** Where the judge's call is logged: the store, or the runtime's traced recorder over it. */
  recorder: Pick<SessionRecorder, "recordLlmCall">;
  models: BatchModels;
  /** The profile with the run's per-query budgets; its wall budget is replaced by `timeoutMs`. */
  profile: Profile;
  loop: BatchDeps["loop"];
  memory: NonNullable<LoopDeps["memory"]>;
  limiters: Limiters;
  timeoutMs: number;
  judge: boolean;
  tolerance?: number;
  retry?: RetryOptions;
  signal?: AbortSignal;
  clock: Clock;
  /** Rate limits and retries, as they happen. */
  onEvent(e: BatchEvent): void;
}

export type QueryResult =
  /** `toolCalls`: the session's tool calls as the store logged them (the outcome was built from them). */
  | { kind: "done"; outcome: ItemOutcome; judgeTokens: number; toolCalls: ToolCallRow[] }
  /** Not the query's fault (Ctrl-C, a model that cannot be used): the row stays pending for --resume. */
  | { kind: "pending"; reason: string; fatal: PdaError | null };

/** The run's profile for its queries: its budgets over the profile's, the wall budget off (see timeoutMs). */
export function queryProfile(profile: Profile, budgets: Partial<Profile["budgets"]> = {}): Profile {
  // The per-query deadline replaces the wall budget: unlike the loop's clock it stops while the query waits
  // for the rate limiter, so no query times out because of a rate limit.
  return { ...profile, budgets: { ...profile.budgets, ...budgets, max_wall_ms: Number.MAX_SAFE_INTEGER } };
}

/**
 * Run `item` as session `sessionId` (continuing it when `resume`: its process died mid-query) and build its
 * outcome from the session and the tool calls the store logged for it.
 */
export async function runQuery(
  item: QueryItem,
  session: { id: string; resume: boolean },
  ctx: QueryContext,
): Promise<QueryResult> {
  const { clock } = ctx;
  const started = clock.now();
  const deadline = new QueryDeadline(ctx.timeoutMs, ctx.signal, () => clock.now());
  const limited = limitedModels(ctx, deadline);

  let result: AgentSession | null = null;
  let error: unknown;
  try {
    const loop = ctx.loop({
      models: {
        perception: limited.wrap(ctx.models.perception),
        decision: limited.wrap(ctx.models.decision),
      },
      signal: deadline.signal,
      profile: ctx.profile,
      memory: ctx.memory,
    });
    result = session.resume
      ? await loop.resume(ctx.store.getSession(session.id))
      : await loop.run(item.query, { sessionId: session.id, agent: "batch" });
  } catch (e) {
    error = e;
  } finally {
    deadline.dispose();
  }

  const fatal = limited.gaveUp() ?? (error instanceof PdaError && error.exitCode >= 2 ? error : null);
  if (fatal) return { kind: "pending", reason: fatal.message, fatal };
  if (ctx.signal?.aborted && result?.status !== "succeeded")
    return { kind: "pending", reason: "interrupted", fatal: null };

  const timedOut = deadline.timedOut;
  let verdict: Verdict | null = null;
  let judgeTokens = 0;
  if (item.expected !== null && result?.status === "succeeded" && !timedOut) {
    const answer = result.state.final_answer ?? "";
    if (ctx.judge) {
      const j = await judge(
        limited.wrap(ctx.models.judge ?? ctx.models.decision),
        { item, answer, sessionId: session.id },
        ctx,
      );
      verdict = j.verdict;
      judgeTokens = j.tokens;
    } else verdict = matchExpected(answer, item.expected, { tolerance: ctx.tolerance });
  }
  const toolCalls = toolCallsOf(ctx.store, session.id);
  const outcome = buildOutcome({
    item,
    sessionId: session.id,
    session: result,
    error,
    timedOut,
    toolCalls,
    verdict,
    rateLimited: limited.rateLimited(),
    durationMs: clock.now() - started,
    finishedAt: clock.iso(),
  });
  return { kind: "done", outcome, judgeTokens, toolCalls };
}

/** The query's models behind the shared limiter; waiting on the limiter pauses the query's deadline. */
function limitedModels(ctx: QueryContext, deadline: QueryDeadline) {
  let rateLimited = 0;
  let gaveUp: ModelError | null = null;
  const wrapped = new Map<ModelProvider, ModelProvider>();
  const wrap = (m: ModelProvider): ModelProvider => {
    let w = wrapped.get(m);
    if (!w) {
      w = new LimitedProvider(m, ctx.limiters.for(m.provider), {
        ...ctx.retry,
        clock: ctx.clock,
        onWait: (waiting) => (waiting ? deadline.pause() : deadline.resume()),
        onRateLimited: (i) => {
          rateLimited += 1;
          ctx.onEvent({ type: "rate_limited", provider: i.provider, delay_ms: i.delayMs, limit: i.limit });
        },
        onRetry: (i) =>
          ctx.onEvent({
            type: "retry",
            provider: i.provider,
            code: i.code,
            attempt: i.attempt,
            delay_ms: i.delayMs,
          }),
        onRateLimitGiveUp: (e) => (gaveUp = e),
      });
      wrapped.set(m, w);
    }
    return w;
  };
  return { wrap, rateLimited: () => rateLimited, gaveUp: (): ModelError | null => gaveUp };
}
