/**
 * Durable CODE steps. Each call a step makes gets its position (`seq`, in the order the code made them) and is
 * logged before it is sent (the intent, through CallOptions.onSend) and when it ends (recordToolCall). When a
 * step runs again — resumed after its process died, after a pause inside it, or going on after Ctrl-C — its
 * code starts from the top in a fresh sandbox and each call that matches the log (same position, tool and
 * arguments) gets its logged outcome without reaching the server; the first call past the log is made for
 * real. A call the log holds as in doubt (sent, no outcome) is made again only when the tool is safe to
 * repeat; otherwise a person (or a policy, which never repeats) decides.
 */
import { createHash } from "node:crypto";
import {
  ToolError,
  isToolErrorCode,
  type AgentSession,
  type CallOptions,
  type LoggedCall,
  type ToolCallRecord,
  type ToolHost,
  type ToolInfo,
  type ToolJournal,
} from "../../core/index.js";
import type { Question, StopAnswer } from "../../hil/index.js";
import { ask, type HumanDeps } from "./human.js";
import { measuredRecord } from "./call-record.js";

/** A question asked from inside a step was answered with a stop: the step ends and the session with it. */
export interface StepHalt {
  question: Question;
  answer: StopAnswer;
}

/**
 * Thrown to the code by a call the step's halt cut short; the step is being cancelled, so no one sees it but
 * the log, which must not keep it: on resume the call is made (or asked about) again.
 */
export class HaltedCall extends ToolError {}

interface StepState {
  step: number;
  next: number;
  log: Map<number, LoggedCall>;
  /** Once the code leaves the logged path, nothing more is replayed and every later call fails with it. */
  broken?: ToolError;
  /** The step must fail with this whatever the code does with the error (a policy's fail_step, a mismatch). */
  failure?: ToolError;
  halt?: StepHalt;
  stop: (why: Error) => void;
}

/** A drive's journal: one step at a time is open in it (a drive runs its steps one after another). */
export class StepJournal {
  private open: StepState | undefined;

  constructor(
    private readonly store: ToolJournal | undefined,
    private readonly s: AgentSession,
    private readonly human: HumanDeps | undefined,
    private readonly now: () => number,
    private readonly iso: () => string,
  ) {}

  /** Opens step `index` with what its earlier runs logged; `stop` cancels the step's sandbox. */
  begin(index: number, stop: (why: Error) => void): { replayable: number } {
    const log = new Map<number, LoggedCall>();
    for (const c of this.store?.stepCalls(this.s.session_id, index) ?? []) log.set(c.seq, c);
    this.open = { step: index, next: 0, log, stop };
    return { replayable: log.size };
  }

  /** Closes the open step: what must fail it, and the question that stopped it, if any. */
  end(): { failure?: ToolError; halt?: StepHalt } {
    const st = this.open;
    this.open = undefined;
    return { failure: st?.failure, halt: st?.halt };
  }

  /** Stops the open step on a question's stop answer (a pause, an abort): the session ends with it. */
  halt(question: Question, answer: StopAnswer, tool: string): never {
    const st = this.open;
    if (st && !st.halt) {
      st.halt = { question, answer };
      st.stop(new Error(`${answer.outcome} by ${answer.answered_by}: ${answer.reason}`));
    }
    throw new HaltedCall("TOOL_CANCELLED", tool, `${tool}: the step was stopped (${answer.outcome})`);
  }

  /** The host the step's code calls through: replays what the log holds, logs what it makes. */
  host(inner: ToolHost): ToolHost {
    return {
      tools: () => inner.tools(),
      onCall: (l) => inner.onCall(l),
      availability: inner.availability?.bind(inner),
      call: (name, args, options) => {
        const st = this.open;
        return st ? this.call(st, inner, name, args, options ?? {}) : inner.call(name, args, options);
      },
    };
  }

  private async call(
    st: StepState,
    inner: ToolHost,
    name: string,
    args: Record<string, unknown>,
    options: CallOptions,
  ): Promise<unknown> {
    const seq = st.next++;
    const info = inner.tools().find((t) => t.qualified === name || (t.unique && t.name === name));
    const argsJson = canonicalJson(args);
    const sha = createHash("sha256").update(argsJson).digest("hex").slice(0, 32);
    const ids = { seq, args_sha: sha, args_json: argsJson };
    const qualified = info?.qualified ?? name;
    if (st.broken) throw st.broken;
    const logged = st.log.get(seq);
    let decidedBy: string | undefined;
    if (logged) {
      if (
        logged.tool !== (info?.name ?? logged.tool) ||
        logged.server !== (info?.server ?? logged.server) ||
        logged.args_sha !== sha
      ) {
        const was = `${logged.server}.${logged.tool}`;
        const now = was === qualified ? `${qualified} with other arguments` : qualified;
        const e = new ToolError(
          "REPLAY_MISMATCH",
          qualified,
          `replaying step ${st.step}: call ${seq + 1} was ${was} before the restart, but now the code calls ${now}; the step took another path, so its logged calls cannot be replayed`,
        );
        st.broken = st.failure = e;
        this.emit(options, inner, name, {
          ok: false,
          error_kind: e.code,
          error_message: e.message,
          ...ids,
          state: "replayed",
        });
        throw e;
      }
      const value = logged.state === "done" ? parsedResult(logged) : undefined;
      if (logged.state === "done" && (!logged.ok || value !== NOT_REPLAYABLE)) {
        return this.replay(options, inner, name, logged, value, ids);
      }
      // In doubt (or its result too large to have been kept): did it happen?
      const verdict = await this.inDoubt(st, info, qualified, args);
      decidedBy = verdict.by;
      if (verdict.kind === "result")
        return this.replay(options, inner, name, { ...logged, ok: true }, verdict.value, {
          ...ids,
          decided_by: verdict.by,
        });
      if (verdict.kind === "skip" || verdict.kind === "fail") {
        const e = new ToolError(
          "IN_DOUBT",
          qualified,
          `${qualified} was sent before the process ended and may or may not have happened; it was not made again (${verdict.by})`,
        );
        if (verdict.kind === "fail") st.failure ??= e;
        this.emit(options, inner, name, {
          ok: false,
          error_kind: e.code,
          error_message: e.message,
          ...ids,
          state: "replayed",
          decided_by: verdict.by,
        });
        throw e;
      }
    }
    return this.live(st, inner, name, args, options, { ...ids, ...(decidedBy && { decided_by: decidedBy }) });
  }

  private async live(
    st: StepState,
    inner: ToolHost,
    name: string,
    args: Record<string, unknown>,
    options: CallOptions,
    ids: Pick<ToolCallRecord, "seq" | "args_sha" | "args_json" | "decided_by">,
  ): Promise<unknown> {
    const started = this.now();
    const startedAt = this.iso();
    let record: ToolCallRecord | undefined;
    const onSend = () => {
      const info = inner.tools().find((t) => t.qualified === name || (t.unique && t.name === name));
      this.store?.intent(this.s.session_id, st.step, {
        seq: ids.seq!,
        server: info?.server ?? serverOf(name),
        tool: info?.name ?? toolOf(name),
        args_sha: ids.args_sha!,
        args_json: ids.args_json!,
        started_at: startedAt,
      });
    };
    const done = (
      r: Pick<ToolCallRecord, "ok" | "bytes" | "error_kind" | "error_message">,
      extra: Partial<ToolCallRecord>,
    ) =>
      options.onRecord?.({
        ...(record ?? measuredRecord(inner, name, startedAt, this.now() - started, r)),
        ...ids,
        state: "done",
        ...extra,
      });
    try {
      const value = await inner.call(name, args, { ...options, onRecord: (r) => (record = r), onSend });
      done({ ok: true, bytes: 0 }, { result_json: resultJson(value) });
      return value;
    } catch (e) {
      if (e instanceof HaltedCall) throw e;
      const code = e instanceof ToolError ? e.code : "TOOL_ERROR";
      // Cut short by a stop (Ctrl-C, the step's end): it may have reached the server, so it is in doubt.
      done(
        { ok: false, bytes: 0, error_kind: code, error_message: (e as Error).message },
        code === "TOOL_CANCELLED" ? { state: "in_doubt" } : {},
      );
      throw e;
    }
  }

  private replay(
    options: CallOptions,
    inner: ToolHost,
    name: string,
    logged: LoggedCall,
    value: unknown,
    ids: Pick<ToolCallRecord, "seq" | "args_sha" | "args_json" | "decided_by">,
  ): unknown {
    const qualified = `${logged.server}.${logged.tool}`;
    this.emit(options, inner, name, {
      ok: logged.ok,
      ...(logged.ok
        ? { result_json: resultJson(value) }
        : { error_kind: logged.error_kind ?? "TOOL_ERROR", error_message: logged.error_message ?? "" }),
      ...ids,
      state: "replayed",
    });
    if (logged.ok) return value;
    const code = logged.error_kind && isToolErrorCode(logged.error_kind) ? logged.error_kind : "TOOL_ERROR";
    throw new ToolError(code, qualified, logged.error_message ?? `${qualified} failed`);
  }

  private emit(
    options: CallOptions,
    inner: ToolHost,
    name: string,
    r: Partial<ToolCallRecord> & Pick<ToolCallRecord, "ok">,
  ): void {
    options.onRecord?.({
      ...measuredRecord(inner, name, this.iso(), 0, {
        ok: r.ok,
        bytes: 0,
        error_kind: r.error_kind,
        error_message: r.error_message,
      }),
      ...r,
    });
  }

  /** Whether a call in doubt is made again: safe tools are; otherwise a person, or a policy, decides. */
  private async inDoubt(
    st: StepState,
    info: ToolInfo | undefined,
    qualified: string,
    args: Record<string, unknown>,
  ): Promise<
    { kind: "repeat" | "skip" | "fail"; by: string } | { kind: "result"; value: unknown; by: string }
  > {
    if (info?.safeToRepeat) return { kind: "repeat", by: "safe_to_repeat" };
    if (!this.human) return { kind: "fail", by: "policy:no_human" };
    const question: Question = {
      kind: "in_doubt",
      tool: info?.name ?? toolOf(qualified),
      server: info?.server ?? serverOf(qualified),
      args,
      step_index: st.step,
    };
    const a = await ask(this.human, this.s, question);
    if (a.kind === "stop") return this.halt(question, a, qualified);
    const by = `${a.answered_by}:${a.choice}`;
    switch (a.choice) {
      case "repeat":
        return { kind: "repeat", by };
      case "give_result":
        return { kind: "result", value: a.value, by };
      case "skip":
        return { kind: "skip", by };
      case "fail_step":
        return { kind: "fail", by };
    }
  }
}

const NOT_REPLAYABLE = Symbol("not replayable");

/** The logged value of a finished call; NOT_REPLAYABLE when it was not kept whole (cut for size, or none). */
function parsedResult(c: LoggedCall): unknown {
  if (c.result_json === null) return NOT_REPLAYABLE;
  if (c.result_json === "") return undefined;
  try {
    return JSON.parse(c.result_json);
  } catch {
    return NOT_REPLAYABLE;
  }
}

/** "" for no value at all; undefined when the value is not JSON (then the call is not replayable). */
function resultJson(value: unknown): string | undefined {
  if (value === undefined) return "";
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

/** JSON with object keys sorted, so the same arguments always hash the same whatever order they were built in. */
export function canonicalJson(v: unknown): string {
  return (
    JSON.stringify(v, (_k, x: unknown) =>
      x && typeof x === "object" && !Array.isArray(x)
        ? Object.fromEntries(
            Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
          )
        : x,
    ) ?? "null"
  );
}

function serverOf(name: string): string {
  return name.includes(".") ? name.slice(0, name.indexOf(".")) : "";
}

function toolOf(name: string): string {
  return name.slice(name.indexOf(".") + 1);
}
