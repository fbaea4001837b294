/**
 * The LLM judge of a batch query, its call logged with the session it judged (through the runtime's recorder,
 * so OTel traces it live under the session's span).
 */
import { errorMessage, type Clock } from "../core/index.js";
import type { ModelProvider, SessionRecorder } from "../core/index.js";
import { judgeAnswer, matchExpected, type Verdict } from "./correct.js";
import type { QueryItem } from "./schemas.js";

/** A judge that fails falls back to matching (and says so in the verdict's reason). */
export async function judge(
  model: ModelProvider,
  q: { item: QueryItem; answer: string; sessionId: string },
  ctx: {
    recorder: Pick<SessionRecorder, "recordLlmCall">;
    clock: Clock;
    tolerance?: number;
    signal?: AbortSignal;
  },
): Promise<{ verdict: Verdict; tokens: number }> {
  const { item, answer, sessionId } = q;
  const startedAt = ctx.clock.iso();
  const t0 = ctx.clock.now();
  try {
    const j = await judgeAnswer(
      model,
      { query: item.query, expected: item.expected!, output: answer },
      ctx.signal,
    );
    const u = j.result.usage;
    ctx.recorder.recordLlmCall(sessionId, {
      role: "judge",
      provider: j.result.provider,
      model: j.result.model,
      ok: true,
      input_tokens: u.input_tokens,
      output_tokens: u.output_tokens,
      latency_ms: j.result.latency_ms,
      attempts: j.result.attempts,
      ...(j.result.finish_reason !== undefined && { finish_reason: j.result.finish_reason }),
      ...(j.result.cost_usd !== undefined && { cost_usd: j.result.cost_usd }),
      prompt: j.prompt,
      raw_response: j.result.raw,
      value: j.verdict,
      started_at: startedAt,
    });
    return {
      verdict: { correct: j.verdict.correct, by: "judge", reason: j.verdict.reason },
      tokens: u.input_tokens + u.output_tokens,
    };
  } catch (e) {
    ctx.recorder.recordLlmCall(sessionId, {
      role: "judge",
      provider: model.provider,
      model: model.model,
      ok: false,
      input_tokens: 0,
      output_tokens: 0,
      latency_ms: ctx.clock.now() - t0,
      attempts: 1,
      prompt: "",
      raw_response: "",
      error: errorMessage(e),
      started_at: startedAt,
    });
    const m = matchExpected(answer, item.expected!, { tolerance: ctx.tolerance });
    return { verdict: { ...m, reason: `the judge failed (${errorMessage(e)}); matched instead` }, tokens: 0 };
  }
}
