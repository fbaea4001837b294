/**
 * The model calls of the loop, each counted and logged: usage (calls, tokens, cost) goes on the session, and the
 * call — prompt, raw response, value, or the error of a failed one — to the recorder as it happens. A phase of
 * several calls (planner, coder) logs each as its own row, and each is checked against the budgets first.
 */
import {
  errorMessage,
  type GenerateRequest,
  type ModelCall,
  type AgentSession,
  type Clock,
  type SessionRecorder,
  type GenerateResult,
  type ModelProvider,
} from "../../core/index.js";
import { ModelOutputError } from "../../llm/index.js";
import type { LoopEvent } from "./events.js";
import { chargeUsage, type SpendAccount } from "./spend.js";

export interface ModelCallContext {
  recorder: SessionRecorder;
  clock: Clock;
  account?: SpendAccount;
  /** Throws when the budgets allow no more model calls; asked before each one. */
  check?: () => void;
  /** The live trace: each call's start and end. */
  emit?: (event: LoopEvent) => void;
}

/**
 * The ModelCall a phase of session `s` makes its calls through: `model` is the role's model unless the phase
 * names another (a planner, a coder). The one place the loop asks a model.
 */
export function modelCall(ctx: ModelCallContext, s: AgentSession, roleModel: ModelProvider): ModelCall {
  return async (request, model = roleModel) => (await callModel(ctx, s, model, request)).value;
}

/**
 * One model call, checked against the budgets first, counted as under way while it runs, then counted and
 * logged as its own llm_calls row under the request's role with its prompt (also when it fails).
 */
async function callModel<T>(
  ctx: ModelCallContext,
  s: AgentSession,
  model: ModelProvider,
  request: GenerateRequest<T>,
): Promise<GenerateResult<T>> {
  const { role } = request;
  const prompt = `${request.system}\n${request.prompt}`;
  ctx.check?.();
  const startedAt = ctx.clock.iso();
  const t0 = ctx.clock.now();
  // Counted while under way, so callers and parallel sub-agents see it before its usage is known.
  const done = ctx.account?.begin();
  ctx.emit?.({ type: "model_start", role, provider: model.provider, model: model.model });
  try {
    const result = await model.generate(request);
    ctx.emit?.({ type: "model_end", role, ok: true, ms: ctx.clock.now() - t0 });
    const { usage } = result;
    chargeUsage(s, result.attempts, usage, result.cost_usd);
    ctx.recorder.recordLlmCall(s.session_id, {
      role,
      provider: result.provider,
      model: result.model,
      ok: true,
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens,
      latency_ms: result.latency_ms,
      attempts: result.attempts,
      cost_usd: result.cost_usd,
      prompt,
      raw_response: result.raw,
      value: result.value,
      ...(result.finish_reason !== undefined ? { finish_reason: result.finish_reason } : {}),
      started_at: startedAt,
    });
    return result;
  } catch (e) {
    // A reply that stayed invalid through the repair round was still paid for: its tokens count like any other.
    const paid = e instanceof ModelOutputError ? e : undefined;
    const usage = paid?.usage ?? { input_tokens: 0, output_tokens: 0 };
    const attempts = paid?.attempts ?? 1;
    const error = `${(e as { code?: string }).code ?? "ERROR"}: ${errorMessage(e)}`;
    ctx.emit?.({ type: "model_end", role, ok: false, ms: ctx.clock.now() - t0, error });
    chargeUsage(s, attempts, usage, paid?.cost_usd);
    ctx.recorder.recordLlmCall(s.session_id, {
      role,
      provider: model.provider,
      model: model.model,
      ok: false,
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens,
      latency_ms: ctx.clock.now() - t0,
      attempts,
      cost_usd: paid?.cost_usd,
      prompt,
      raw_response: paid?.raw ?? "",
      error,
      ...(paid?.finish_reason !== undefined ? { finish_reason: paid.finish_reason } : {}),
      started_at: startedAt,
    });
    throw e;
  } finally {
    done?.();
  }
}
