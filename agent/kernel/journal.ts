/**
 * Durable CODE steps. Each call a step makes gets its position (`seq`, in the order the code made them) and is
 * logged before it is sent (the intent, through CallOptions.onSend) and when it ends (recordToolCall). When a
 * step runs again — resumed after its process died, after a pause inside it, or going on after Ctrl-C — its
 * code starts from the top in a fresh sandbox and each call that matches the log (same position, tool and
 * arguments) gets its logged outcome without reaching the server; the first call past the log is made for
 * real. A call the log holds as in doubt (sent, no outcome) is made again only when the tool is safe to
 * repeat; otherwise a person (or a policy, which never repeats) decides.
 */
import { hash } from "node:crypto";
import { TAG } from "../../action/index.js";
import {
  ToolError,
  isToolErrorCode,
  type AgentSession,
  type CallOptions,
  type LoggedCall,
  type ReplayOutcome,
  type ReplayedCall,
  type StepReplay,
  type ToolCallRecord,
  type ToolErrorCode,
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
  /** Asked in the session of a sub-agent the step called, which paused on it. */
  via?: { agent: string; session_id: string };
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
  /** Clock readings the code took that go with its next live call (CallOptions.clock), joined by ",". */
  clock: string;
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
    this.open = { step: index, next: 0, log, stop, clock: "" };
    return { replayable: log.size };
  }

  /** Closes the open step: what must fail it, and the question that stopped it, if any. */
  end(): { failure?: ToolError; halt?: StepHalt } {
    const st = this.open;
    this.open = undefined;
    if (st) this.store?.endStep?.(this.s.session_id, st.step);
    return { failure: st?.failure, halt: st?.halt };
  }

  /** The open step took another path than its log outside its tool calls: nothing more replays; it fails. */
  diverged(e: ToolError): void {
    const st = this.open;
    if (!st) return;
    st.broken ??= e;
    st.failure ??= e;
  }

  /** A sub-agent the open step called paused on a question: the step pauses on it too (not a call's error). */
  pausedWith(question: Question, answer: StopAnswer, via: { agent: string; session_id: string }): void {
    const st = this.open;
    if (!st || st.halt) return;
    st.halt = { question, answer, via };
    st.stop(new Error(`${via.agent} waits on a person: ${answer.reason}`));
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
      replay: () => {
        const st = this.open;
        return st ? this.prepareReplay(st, inner) : undefined;
      },
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
    const seq = options.seq ?? st.next;
    st.next = Math.max(st.next, seq + 1);
    if (options.clock) st.clock = joinClock(st.clock, options.clock);
    const info = inner.tools().find((t) => t.qualified === name || (t.unique && t.name === name));
    const ids = callIds(seq, args);
    const qualified = info?.qualified ?? name;
    if (st.broken) throw st.broken;
    const logged = st.log.get(seq);
    let decidedBy: string | undefined;
    if (logged) {
      const mismatch = this.mismatch(st, logged, info, qualified, ids);
      if (mismatch) {
        this.emit(options, inner, name, mismatch);
        throw st.broken;
      }
      const value = logged.state === "done" ? parsedResult(logged) : undefined;
      if (logged.state === "done" && (!logged.ok || value !== NOT_REPLAYABLE)) {
        return this.replay(options, logged, value, ids);
      }
      // In doubt, or done with its result not kept whole (too large, a secret redacted): handled alike.
      const happened = logged.state === "done";
      const verdict = await this.inDoubt(st, info, qualified, args, happened);
      decidedBy = verdict.by;
      if (verdict.kind === "result") {
        this.settle(
          st,
          options,
          logged,
          { ...ids, decided_by: verdict.by },
          { ok: true, result_json: resultJson(verdict.value) },
        );
        return verdict.value;
      }
      if (verdict.kind === "skip" || verdict.kind === "fail") {
        const e = new ToolError(
          "IN_DOUBT",
          qualified,
          happened
            ? `${qualified} was made before the restart, but its result was not kept whole (too large, or a secret the store redacted); it was not made again (${verdict.by})`
            : `${qualified} was sent before the process ended and may or may not have happened; it was not made again (${verdict.by})`,
        );
        if (verdict.kind === "fail") st.failure ??= e;
        const failed = { ok: false, error_kind: e.code, error_message: e.message };
        this.settle(st, options, logged, { ...ids, decided_by: verdict.by }, failed);
        throw e;
      }
    }
    return this.live(st, inner, info, name, args, options, {
      ...ids,
      ...(decidedBy && { decided_by: decidedBy }),
    });
  }

  /** The failure record of a call that is not the one the log holds at its place (and the step breaks), if so. */
  private mismatch(
    st: StepState,
    logged: LoggedCall,
    info: ToolInfo | undefined,
    qualified: string,
    ids: Pick<ToolCallRecord, "seq" | "args_sha" | "args_json">,
  ): (Partial<ToolCallRecord> & { ok: false }) | undefined {
    if (
      info &&
      logged.tool === info.name &&
      logged.server === info.server &&
      logged.args_sha === ids.args_sha
    )
      return undefined;
    const was = `${logged.server}.${logged.tool}`;
    const now = !info
      ? `${qualified}, which no tool takes now`
      : was === qualified
        ? `${qualified} with other arguments`
        : qualified;
    const e = new ToolError(
      "REPLAY_MISMATCH",
      qualified,
      `replaying step ${st.step}: call ${ids.seq! + 1} was ${was} before the restart, but now the code calls ${now}; the step took another path, so its logged calls cannot be replayed`,
    );
    st.broken = st.failure = e;
    return { ok: false, error_kind: e.code, error_message: e.message, ...ids, state: "replayed" };
  }

  /**
   * The logged outcomes the sandbox may hand the code itself, from the first call up to the first one that
   * needs the host (in doubt, or its result not kept); positions with nothing logged (a call refused before
   * it reached the log) are left to the host.
   */
  private prepareReplay(st: StepState, inner: ToolHost): StepReplay | undefined {
    if (st.broken) return undefined;
    const confirm: StepReplay["confirm"] = (calls, options) => this.confirm(st, inner, calls, options ?? {});
    // Only a step's first run here: its code starts from the top, as the outcomes and the readings do.
    if (st.next !== 0 || st.log.size === 0) return { outcomes: [], clock: "", confirm };
    // Every logged call's readings, in the order the code took them: the log is in call order (stepCalls).
    let clock = "";
    for (const c of st.log.values()) clock = joinClock(clock, readings(c.clock_json));
    const outcomes: (ReplayOutcome | null)[] = [];
    const last = Math.max(...st.log.keys());
    for (let seq = 0; seq <= last; seq++) {
      const c = st.log.get(seq);
      if (!c) {
        outcomes.push(null);
        continue;
      }
      if (c.state !== "done" || (c.ok && !c.result_whole)) break;
      // A whole result is JSON.stringify's text: the sandbox takes it as it stands unless it holds a "$pda" key,
      // which its codec would read as a tag (then the value goes encoded, escaping the key).
      let outcome: ReplayOutcome;
      if (!c.ok) outcome = { ok: false, ...loggedError(c) };
      else if (c.result_json !== "" && !c.result_json!.includes(TAG))
        outcome = { ok: true, text: c.result_json! };
      else {
        const value = parsedResult(c);
        if (value === NOT_REPLAYABLE) break;
        outcome = { ok: true, value };
      }
      // The sandbox may match the call against the logged text itself only if that text is the arguments
      // whole: not redacted or cut (the store tells; such a text would not hash to the logged arguments' hash).
      if (c.args_whole && c.args_json !== null && c.args_sha !== null)
        outcome.logged = { name: `${c.server}.${c.tool}`, argsJson: c.args_json };
      outcomes.push(outcome);
    }
    while (outcomes.length > 0 && outcomes[outcomes.length - 1] === null) outcomes.pop();
    return { outcomes, clock, confirm };
  }

  /** Calls the sandbox answered from the log: checked against it and logged as replayed, in one write. */
  private confirm(
    st: StepState,
    inner: ToolHost,
    calls: readonly ReplayedCall[],
    options: CallOptions,
  ): void {
    const byName = new Map(inner.tools().map((t) => [t.qualified, t]));
    // Confirmed together, at one time: one clock reading for all their rows.
    const at = this.iso();
    const body = () => {
      for (const { seq, call, asLogged } of calls) {
        st.next = Math.max(st.next, seq + 1);
        if (st.broken) return; // past a mismatch the outcomes the code got mean nothing; the step fails
        const logged = st.log.get(seq)!;
        // The very call logged: its own ids, once a tool still takes it.
        if (asLogged && byName.has(`${logged.server}.${logged.tool}`)) {
          const ids = { seq, args_sha: logged.args_sha!, args_json: logged.args_json! };
          this.logReplayed(options, logged, ids, logged.result_json ?? undefined, at);
          continue;
        }
        const name = call?.name ?? `${logged.server}.${logged.tool}`;
        const info = call && byName.get(call.name);
        const ids = callIds(seq, call?.args ?? null);
        const mismatch = this.mismatch(st, logged, info, name, ids);
        if (mismatch) this.emit(options, inner, name, mismatch);
        else this.logReplayed(options, logged, ids, logged.result_json ?? undefined, at);
      }
    };
    if (this.store?.replayed) this.store.replayed(body);
    else if (this.store?.batch) this.store.batch(body);
    else body();
  }

  private async live(
    st: StepState,
    inner: ToolHost,
    info: ToolInfo | undefined,
    name: string,
    args: Record<string, unknown>,
    options: CallOptions,
    ids: Pick<ToolCallRecord, "seq" | "args_sha" | "args_json" | "decided_by">,
  ): Promise<unknown> {
    const started = this.now();
    const startedAt = options.startedAt ?? this.iso();
    let record: ToolCallRecord | undefined;
    // The readings the code took before this call: those the log gave it for this place (a call in doubt made
    // again), then those it took since, so a later resume hands it the same ones.
    const clock = joinClock(readings(st.log.get(ids.seq!)?.clock_json ?? null), st.clock);
    st.clock = "";
    const clockJson = clock === "" ? undefined : `[${clock}]`;
    const onSend = () => {
      this.store?.intent(this.s.session_id, st.step, {
        seq: ids.seq!,
        server: info?.server ?? serverOf(name),
        tool: info?.name ?? toolOf(name),
        args_sha: ids.args_sha!,
        args_json: ids.args_json!,
        started_at: startedAt,
        ...(clockJson && { clock_json: clockJson }),
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
        ...(clockJson && { clock_json: clockJson }),
        ...extra,
      });
    try {
      // The start time taken outside is not passed in: a host within (an approval gate) may wait before it.
      const value = await inner.call(name, args, {
        ...options,
        startedAt: undefined,
        onRecord: (r) => (record = r),
        onSend,
      });
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
    logged: LoggedCall,
    value: unknown,
    ids: Pick<ToolCallRecord, "seq" | "args_sha" | "args_json" | "decided_by">,
  ): unknown {
    this.logReplayed(options, logged, ids, logged.result_json ?? resultJson(value));
    if (logged.ok) return value;
    const e = loggedError(logged);
    throw new ToolError(e.code, e.tool, e.message);
  }

  /** A replayed call's own row: its result is the one logged with the call it stands for. */
  private logReplayed(
    options: CallOptions,
    logged: LoggedCall,
    ids: Pick<ToolCallRecord, "seq" | "args_sha" | "args_json" | "decided_by">,
    result = logged.result_json ?? undefined,
    at = this.iso(),
  ): void {
    // The logged call names its tool: no lookup in the host's list per replayed call.
    const record: ToolCallRecord = {
      server: logged.server,
      tool: logged.tool,
      started_at: at,
      latency_ms: 0,
      ok: logged.ok,
      bytes: 0,
      ...(logged.ok
        ? { result_json: result }
        : { error_kind: logged.error_kind ?? "TOOL_ERROR", error_message: logged.error_message ?? "" }),
      ...ids,
      state: "replayed",
    };
    // The logged row over again (a store keeps a reference to it): what the code got, and what it asked.
    if (
      logged.state === "done" &&
      !logged.later &&
      ids.decided_by === undefined &&
      ids.args_sha === logged.args_sha &&
      ids.args_json === logged.args_json &&
      (logged.ok
        ? logged.result_json !== null && result === logged.result_json
        : logged.error_kind !== null && logged.error_message !== null)
    )
      record.copies_logged = true;
    options.onRecord?.(record);
  }

  /**
   * The outcome a person (or a policy) decided for a call in doubt, logged as that call's outcome, not as a
   * replayed copy: a later run of the step (another pause in it) replays the decision instead of asking again.
   */
  private settle(
    st: StepState,
    options: CallOptions,
    logged: LoggedCall,
    ids: Pick<ToolCallRecord, "seq" | "args_sha" | "args_json" | "decided_by">,
    outcome: Pick<ToolCallRecord, "ok" | "result_json" | "error_kind" | "error_message">,
  ): void {
    // As a live call does: the readings logged at this place, then those the code took since.
    const clock = joinClock(readings(logged.clock_json), st.clock);
    st.clock = "";
    options.onRecord?.({
      server: logged.server,
      tool: logged.tool,
      started_at: this.iso(),
      latency_ms: 0,
      bytes: 0,
      ...outcome,
      ...ids,
      state: "done",
      ...(clock !== "" && { clock_json: `[${clock}]` }),
    });
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
    happened: boolean,
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
      ...(happened && { happened }),
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

/** A call's position and the hash of its arguments (JSON with sorted keys), as the log keys it. */
function callIds(
  seq: number,
  args: Record<string, unknown> | null,
): Pick<ToolCallRecord, "seq" | "args_sha" | "args_json"> {
  const argsJson = canonicalJson(args);
  return { seq, args_sha: argsSha(argsJson), args_json: argsJson };
}

// One-shot: a Hash object per call costs more than the hashing of a few hundred bytes.
const argsSha = (argsJson: string) => hash("sha256", argsJson, "hex").slice(0, 32);

/** The ToolError a logged failure is thrown as again. */
function loggedError(c: LoggedCall): { code: ToolErrorCode; tool: string; message: string } {
  const tool = `${c.server}.${c.tool}`;
  const code = c.error_kind && isToolErrorCode(c.error_kind) ? c.error_kind : "TOOL_ERROR";
  return { code, tool, message: c.error_message ?? `${tool} failed` };
}

/**
 * The logged value of a finished call; NOT_REPLAYABLE when it was not kept whole (cut for size, a secret
 * redacted, or none).
 */
function parsedResult(c: LoggedCall): unknown {
  if (c.result_json === null || !c.result_whole) return NOT_REPLAYABLE;
  if (c.result_json === "") return undefined;
  try {
    return JSON.parse(c.result_json);
  } catch {
    return NOT_REPLAYABLE;
  }
}

/** Two runs of clock readings (StepReplay.clock) as one, in order. */
function joinClock(a: string, b: string): string {
  return a === "" ? b : b === "" ? a : `${a},${b}`;
}

/** A logged call's clock readings (its clock_json, a JSON array) as StepReplay.clock joins them. */
function readings(clockJson: string | null): string {
  return clockJson === null ? "" : clockJson.slice(1, -1);
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
  // Most arguments are built with their keys in order already: then plain JSON is the same text, made faster.
  if (keysSorted(v)) return JSON.stringify(v) ?? "null";
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

/** True when every plain object in `v` has its keys in sorted order (and none has a toJSON of its own). */
function keysSorted(v: unknown): boolean {
  if (v === null || typeof v !== "object") return true;
  if (Array.isArray(v)) return v.every(keysSorted);
  if (typeof (v as { toJSON?: unknown }).toJSON === "function") return false;
  let last: string | undefined;
  for (const k in v) {
    if (!Object.hasOwn(v, k)) continue;
    if (last !== undefined && !(last < k)) return false;
    last = k;
    if (!keysSorted((v as Record<string, unknown>)[k])) return false;
  }
  return true;
}

function serverOf(name: string): string {
  return name.includes(".") ? name.slice(0, name.indexOf(".")) : "";
}

function toolOf(name: string): string {
  return name.slice(name.indexOf(".") + 1);
}
