/**
 * Sessions, steps, model calls, tool calls and human questions as spans with the GenAI semantic conventions
 * (gen_ai.* as of semantic-conventions 1.37+), each given its own start and end time: the live recorder passes
 * the times as things happen, `pda export --otel` the times stored with them. Both go through this one writer,
 * so a trace looks the same whichever way it was made.
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Counter,
  type Histogram,
  type Meter,
  type Span,
  type Tracer,
} from "@opentelemetry/api";
import type { AgentSession, HumanInput, LlmCallRecord, Step, ToolCallRecord } from "../core/index.js";

/** The pda attributes beside the gen_ai.* ones (no convention names these). */
const PDA = {
  status: "pda.session.status",
  statusReason: "pda.session.status_reason",
  parent: "pda.session.parent_id",
  cost: "pda.usage.cost_usd",
  role: "pda.model.role",
  attempts: "pda.model.attempts",
  stepIndex: "pda.step.index",
  stepType: "pda.step.type",
  stepStatus: "pda.step.status",
  server: "pda.tool.server",
  bytes: "pda.tool.result_bytes",
  outcome: "pda.tool.outcome",
  humanKind: "pda.human.kind",
  answeredBy: "pda.human.answered_by",
  question: "pda.human.question",
  answer: "pda.human.answer",
  code: "pda.step.code",
  batch: "pda.batch.run_id",
} as const;

// Advisory bucket boundaries of the GenAI metric conventions.
const TOKEN_BUCKETS = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
];
const DURATION_BUCKETS = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

export interface GenAiMetrics {
  tokens: Histogram;
  duration: Histogram;
  toolCalls: Counter;
}

export function genAiMetrics(meter: Meter): GenAiMetrics {
  return {
    tokens: meter.createHistogram("gen_ai.client.token.usage", {
      unit: "{token}",
      description: "Number of input and output tokens used",
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    }),
    duration: meter.createHistogram("gen_ai.client.operation.duration", {
      unit: "s",
      description: "GenAI operation duration",
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    }),
    toolCalls: meter.createCounter("pda.tool.calls", {
      unit: "{call}",
      description: "Tool calls by tool, server and outcome",
    }),
  };
}

export interface SpanWriterOptions {
  /** Prompts, responses, queries, answers and human answers on spans (redacted), off by default. */
  captureContent: boolean;
  /** The store's redaction, for everything captured and every error message. */
  redact: (text: string) => string;
}

/** A loose model-call record: the stored one, or the live one before the store redacts it. */
type ModelCall = Omit<LlmCallRecord, "value" | "prompt" | "raw_response"> & {
  prompt?: string;
  raw_response?: string;
};

interface OpenSession {
  span: Span;
  ctx: Context;
  steps: Map<number, { span: Span; ctx: Context; ended: boolean }>;
  /** The step under way: model calls made meanwhile (and sub-agents started from it) are its children. */
  open?: number;
  ended: boolean;
  /** When the question being asked was put (the answer's record carries only when it was answered). */
  askedAt?: number;
}

const ms = (iso: string) => Date.parse(iso);
/** The code of a "CODE: message" error string. */
const errorCode = (error: string | undefined) => error?.match(/^([A-Z][A-Z0-9_]*):/)?.[1] ?? "error";
const FAILED: ReadonlySet<string> = new Set(["failed", "aborted", "budget_exhausted"]);

export class SpanWriter {
  private readonly sessions = new Map<string, OpenSession>();
  /** Where sessions without a parent session go: a batch run's span while one runs. */
  private root: Context = ROOT_CONTEXT;
  private batch?: Span;

  constructor(
    private readonly tracer: Tracer,
    private readonly metrics: GenAiMetrics | undefined,
    private readonly opts: SpanWriterOptions,
  ) {}

  private content(text: string): string {
    return this.opts.redact(text);
  }

  private messages(role: string, text: string, finish?: string): string {
    const m: Record<string, unknown> = { role, parts: [{ type: "text", content: this.content(text) }] };
    if (finish) m.finish_reason = finish;
    return JSON.stringify([m]);
  }

  batchStart(runId: string, at: number, attributes: Attributes = {}): void {
    this.batch = this.tracer.startSpan(
      "pda.batch",
      { startTime: at, attributes: { [PDA.batch]: runId, ...attributes } },
      ROOT_CONTEXT,
    );
    this.root = trace.setSpan(ROOT_CONTEXT, this.batch);
  }

  batchEnd(at: number, status: string): void {
    if (!this.batch) return;
    this.batch.setAttribute("pda.batch.status", status);
    if (status !== "finished" && status !== "done")
      this.batch.setStatus({ code: SpanStatusCode.ERROR, message: status });
    this.batch.end(at);
    this.batch = undefined;
    this.root = ROOT_CONTEXT;
  }

  /** The context a sub-agent session started from step `index` of `sessionId` hangs under. */
  stepContext(sessionId: string, index: number | undefined): Context | undefined {
    const s = this.sessions.get(sessionId);
    if (!s) return undefined;
    const step = index === undefined ? undefined : s.steps.get(index);
    return step?.ctx ?? s.ctx;
  }

  /**
   * A session's invoke_agent span. Its parent: `parent` when given (export), else the step of its parent
   * session that is under way (a sub-agent called from CODE), else the batch run's span or none.
   */
  sessionStart(
    s: Pick<AgentSession, "session_id" | "parent_session_id" | "agent" | "original_query">,
    at: number,
    parent?: Context,
  ): void {
    if (this.sessions.has(s.session_id)) return;
    const caller = s.parent_session_id ? this.sessions.get(s.parent_session_id) : undefined;
    const ctx =
      parent ??
      (caller
        ? ((caller.open !== undefined ? caller.steps.get(caller.open)?.ctx : undefined) ?? caller.ctx)
        : undefined) ??
      this.root;
    const agent = s.agent ?? "pda";
    const attributes: Attributes = {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": agent,
      "gen_ai.conversation.id": s.session_id,
    };
    if (s.parent_session_id) attributes[PDA.parent] = s.parent_session_id;
    if (this.opts.captureContent)
      attributes["gen_ai.input.messages"] = this.messages("user", s.original_query);
    const span = this.tracer.startSpan(
      `invoke_agent ${agent}`,
      { kind: SpanKind.INTERNAL, startTime: at, attributes },
      ctx,
    );
    this.sessions.set(s.session_id, { span, ctx: trace.setSpan(ctx, span), steps: new Map(), ended: false });
  }

  /** The session, opened now if its start was not seen (a resumed session). */
  private session(id: string, at: number): OpenSession {
    let s = this.sessions.get(id);
    if (!s) {
      this.sessionStart({ session_id: id, original_query: "" }, at);
      s = this.sessions.get(id)!;
    }
    return s;
  }

  stepStart(sessionId: string, step: Step, at: number): void {
    const s = this.session(sessionId, at);
    if (s.steps.has(step.index)) return;
    const attributes: Attributes = {
      [PDA.stepIndex]: step.index,
      [PDA.stepType]: step.type,
      "gen_ai.conversation.id": sessionId,
    };
    if (this.opts.captureContent && step.code) attributes[PDA.code] = this.content(step.code);
    const span = this.tracer.startSpan(`pda.step ${step.type}`, { startTime: at, attributes }, s.ctx);
    s.steps.set(step.index, { span, ctx: trace.setSpan(s.ctx, span), ended: false });
    s.open = step.index;
  }

  stepEnd(sessionId: string, step: Step, at: number): void {
    const s = this.session(sessionId, at);
    if (!s.steps.has(step.index)) this.stepStart(sessionId, step, at);
    const open = s.steps.get(step.index)!;
    if (open.ended) return;
    open.ended = true;
    open.span.setAttribute(PDA.stepStatus, step.status);
    if (step.attempts) open.span.setAttribute("pda.step.attempts", step.attempts);
    if (this.opts.captureContent && step.code) open.span.setAttribute(PDA.code, this.content(step.code));
    const error = step.error ?? step.execution_result?.error;
    if (step.status === "failed" || error) {
      open.span.setAttribute("error.type", error?.code ?? "failed");
      open.span.setStatus({
        code: SpanStatusCode.ERROR,
        message: this.opts.redact(error?.message ?? step.status),
      });
    }
    open.span.end(at);
    if (s.open === step.index) s.open = undefined;
  }

  llmCall(sessionId: string, r: ModelCall): void {
    const start = ms(r.started_at);
    const end = start + r.latency_ms;
    const s = this.session(sessionId, start);
    const parent = (s.open !== undefined ? s.steps.get(s.open)?.ctx : undefined) ?? s.ctx;
    const attributes: Attributes = {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": r.provider,
      "gen_ai.request.model": r.model,
      "gen_ai.response.model": r.model,
      "gen_ai.conversation.id": sessionId,
      "gen_ai.usage.input_tokens": r.input_tokens,
      "gen_ai.usage.output_tokens": r.output_tokens,
      [PDA.role]: r.role,
      [PDA.attempts]: r.attempts,
    };
    if (r.cost_usd !== undefined) attributes[PDA.cost] = r.cost_usd;
    if (r.finish_reason !== undefined) attributes["gen_ai.response.finish_reasons"] = [r.finish_reason];
    if (this.opts.captureContent) {
      if (r.prompt !== undefined) attributes["gen_ai.input.messages"] = this.messages("user", r.prompt);
      if (r.raw_response !== undefined)
        attributes["gen_ai.output.messages"] = this.messages(
          "assistant",
          r.raw_response,
          r.finish_reason ?? (r.ok ? "stop" : "error"),
        );
    }
    const span = this.tracer.startSpan(
      `chat ${r.model}`,
      { kind: SpanKind.CLIENT, startTime: start, attributes },
      parent,
    );
    if (!r.ok) {
      span.setAttribute("error.type", errorCode(r.error));
      span.setStatus({ code: SpanStatusCode.ERROR, message: this.opts.redact(r.error ?? "") });
    }
    span.end(end);
    if (!this.metrics) return;
    const base: Attributes = {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": r.provider,
      "gen_ai.request.model": r.model,
    };
    this.metrics.tokens.record(r.input_tokens, { ...base, "gen_ai.token.type": "input" });
    this.metrics.tokens.record(r.output_tokens, { ...base, "gen_ai.token.type": "output" });
    this.metrics.duration.record(
      r.latency_ms / 1000,
      r.ok ? base : { ...base, "error.type": errorCode(r.error) },
    );
  }

  toolCall(sessionId: string, stepIndex: number | null | undefined, r: ToolCallRecord): void {
    const start = ms(r.started_at);
    const s = this.session(sessionId, start);
    const parent =
      (stepIndex !== null && stepIndex !== undefined ? s.steps.get(stepIndex)?.ctx : undefined) ?? s.ctx;
    const attributes: Attributes = {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": r.tool,
      "gen_ai.conversation.id": sessionId,
      [PDA.server]: r.server,
      [PDA.bytes]: r.bytes,
    };
    const span = this.tracer.startSpan(`execute_tool ${r.tool}`, { startTime: start, attributes }, parent);
    if (!r.ok) {
      span.setAttribute("error.type", r.error_kind ?? "error");
      span.setStatus({ code: SpanStatusCode.ERROR, message: this.opts.redact(r.error_message ?? "") });
    }
    span.end(start + r.latency_ms);
    this.metrics?.toolCalls.add(1, {
      "gen_ai.tool.name": r.tool,
      [PDA.server]: r.server,
      [PDA.outcome]: r.ok ? "ok" : "error",
      ...(r.ok ? {} : { "error.type": r.error_kind ?? "error" }),
    });
  }

  /** A question was put to the person (live only: the stored answer has no ask time). */
  asked(sessionId: string, at: number): void {
    const s = this.sessions.get(sessionId);
    if (s) s.askedAt = at;
  }

  human(sessionId: string, input: HumanInput): void {
    const end = ms(input.at);
    const s = this.session(sessionId, end);
    const start = Math.min(s.askedAt ?? end, end);
    s.askedAt = undefined;
    const step = input.step_index !== undefined ? s.steps.get(input.step_index) : undefined;
    const attributes: Attributes = {
      [PDA.humanKind]: input.kind,
      [PDA.answeredBy]: input.answered_by,
      "gen_ai.conversation.id": sessionId,
    };
    if (this.opts.captureContent) {
      attributes[PDA.question] = this.content(input.question);
      attributes[PDA.answer] = this.content(input.answer);
    }
    this.tracer
      .startSpan(`pda.human ${input.kind}`, { startTime: start, attributes }, step?.ctx ?? s.ctx)
      .end(end);
  }

  /** The session ended (or paused on a question): its totals and status on its span. */
  sessionEnd(session: AgentSession, at: number): void {
    const s = this.session(session.session_id, at);
    if (s.ended) return;
    s.ended = true;
    for (const [index, step] of s.steps) {
      if (!step.ended)
        this.stepEnd(session.session_id, session.steps[index] ?? ({ index, status: "pending" } as Step), at);
    }
    s.span.setAttributes({
      "gen_ai.usage.input_tokens": session.usage.input_tokens,
      "gen_ai.usage.output_tokens": session.usage.output_tokens,
      [PDA.cost]: session.usage.cost_usd,
      [PDA.status]: session.status,
      "pda.session.steps": session.steps.length,
      "pda.session.llm_calls": session.usage.llm_calls,
      "pda.session.tool_calls": session.usage.tool_calls,
    });
    if (session.status_reason) s.span.setAttribute(PDA.statusReason, this.opts.redact(session.status_reason));
    if (this.opts.captureContent && session.state.final_answer)
      s.span.setAttribute(
        "gen_ai.output.messages",
        this.messages("assistant", session.state.final_answer, "stop"),
      );
    if (FAILED.has(session.status)) {
      s.span.setAttribute("error.type", session.status);
      s.span.setStatus({
        code: SpanStatusCode.ERROR,
        message: this.opts.redact(session.status_reason ?? session.status),
      });
    }
    s.span.end(at);
    // Only the span's id is kept (not the ended span and its attributes): calls logged after the end (a batch's
    // judge) still find their session, and a long batch or chat holds a few bytes per session.
    s.steps.clear();
    s.span = trace.wrapSpanContext(s.span.spanContext());
    s.ctx = trace.setSpan(ROOT_CONTEXT, s.span);
  }
}
