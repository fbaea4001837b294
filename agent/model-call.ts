/**
 * The model calls of the loop, each counted and logged: usage (calls, tokens, cost) goes on the session, and the
 * call — prompt, raw response, value, or the error of a failed one — to the recorder as it happens. A phase of
 * several calls (planner, coder) logs each as its own row, and each is checked against the budgets first.
 */
import {
  errorMessage,
  type AgentSession,
  type Clock,
  type SessionRecorder,
  type GenerateResult,
  type ModelProvider,
  type TokenUsage,
} from "../core/index.js";
import { ModelOutputError } from "../llm/index.js";
import type { LoopEvent } from "./events.js";
import type { ModelCall, Phase, PromptText } from "./hooks.js";
import type { SpendAccount } from "./spend.js";

export interface ModelCallContext {
  recorder: SessionRecorder;
  clock: Clock;
  account?: SpendAccount;
  /** Throws when the budgets allow no more model calls; asked before each one. */
  check?: () => void;
  /** The live trace: each call's start and end. */
  emit?: (event: LoopEvent) => void;
}

/** A phase's model calls, made for session `s`; `role` names the row of a one-call phase. */
export async function trackModelCall<I, T extends { result: GenerateResult<unknown>; prompt: string }>(
  ctx: ModelCallContext,
  s: AgentSession,
  role: string,
  model: ModelProvider,
  phase: Phase<I, T>,
  input: I,
): Promise<Omit<T, "result" | "prompt">> {
  if ("calls" in phase) return phase.calls(input, modelCall(ctx, s));
  const failedPrompt = () => joined(phase.prompt(input));
  return track(ctx, s, role, model, failedPrompt, () => phase.run(model, input));
}

/** The ModelCall a phase of several calls makes its calls through. */
function modelCall(ctx: ModelCallContext, s: AgentSession): ModelCall {
  return async (role, model, prompt, generate) => {
    const text = joined(prompt);
    const out = await track(
      ctx,
      s,
      role,
      model,
      () => text,
      async () => ({ result: await generate(), prompt: text }),
    );
    return out.result;
  };
}

const joined = (p: PromptText) => `${p.system}\n${p.prompt}`;

async function track<T extends { result: GenerateResult<unknown>; prompt: string }>(
  ctx: ModelCallContext,
  s: AgentSession,
  role: string,
  model: ModelProvider,
  failedPrompt: () => string,
  run: () => Promise<T>,
): Promise<T> {
  ctx.check?.();
  const startedAt = ctx.clock.iso();
  const t0 = ctx.clock.now();
  // Counted while under way, so callers and parallel sub-agents see it before its usage is known.
  const done = ctx.account?.begin();
  ctx.emit?.({ type: "model_start", role, provider: model.provider, model: model.model });
  try {
    const out = await run();
    ctx.emit?.({ type: "model_end", role, ok: true, ms: ctx.clock.now() - t0 });
    const { usage } = out.result;
    spend(s, out.result.attempts, usage, out.result.cost_usd);
    ctx.recorder.recordLlmCall(s.session_id, {
      role,
      provider: out.result.provider,
      model: out.result.model,
      ok: true,
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens,
      latency_ms: out.result.latency_ms,
      attempts: out.result.attempts,
      cost_usd: out.result.cost_usd,
      prompt: out.prompt,
      raw_response: out.result.raw,
      value: out.result.value,
      started_at: startedAt,
    });
    return out;
  } catch (e) {
    // A reply that stayed invalid through the repair round was still paid for: its tokens count like any other.
    const paid = e instanceof ModelOutputError ? e : undefined;
    const usage = paid?.usage ?? { input_tokens: 0, output_tokens: 0 };
    const attempts = paid?.attempts ?? 1;
    const error = `${(e as { code?: string }).code ?? "ERROR"}: ${errorMessage(e)}`;
    ctx.emit?.({ type: "model_end", role, ok: false, ms: ctx.clock.now() - t0, error });
    spend(s, attempts, usage, paid?.cost_usd);
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
      // The prompt is rendered again only for the log of a failed call; a successful one returns it.
      prompt: failedPrompt(),
      raw_response: paid?.raw ?? "",
      error,
      started_at: startedAt,
    });
    throw e;
  } finally {
    done?.();
  }
}

function spend(s: AgentSession, calls: number, usage: TokenUsage, costUsd: number | undefined): void {
  s.usage.llm_calls += calls;
  s.usage.input_tokens += usage.input_tokens;
  s.usage.output_tokens += usage.output_tokens;
  s.usage.tokens += usage.input_tokens + usage.output_tokens;
  s.usage.cost_usd += costUsd ?? 0;
}
