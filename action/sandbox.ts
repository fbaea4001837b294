/**
 * runCode: one CODE step. The step's QuickJS runtime runs in its engine's worker thread (engine.ts, vm.ts);
 * this file is the host side, on the caller's thread: it starts the calls the code makes (tools through the
 * ToolHost, host namespaces), records them, keeps the logs, and owns the step's clock and cancellation. The
 * code's work never runs here, so a spinning step leaves this thread free: Ctrl-C and the deadline reach it
 * through a shared STOP word the engine's interrupt handler reads, and a thread that does not stop within
 * STOP_GRACE_MS is terminated. Every limit ends the step with a typed StepError; nothing the code does throws
 * out of runCode.
 */
import { setMaxListeners } from "node:events";
import type { SandboxLimits } from "../config/index.js";
import {
  ToolError,
  errorMessage,
  isToolErrorCode,
  jsNames,
  type ExecutionResult,
  type JsNames,
  type ReplayOutcome,
  type ReplayedCall,
  type StepError,
  type StepReplay,
  type ToolCallRecord,
  type ToolErrorCode,
  type ToolHost,
  type ToolInfo,
} from "../core/index.js";
import { toolArguments } from "./args.js";
import { TAG, decode, encode, jsonDepth } from "./codec.js";
import { acquireEngine, releaseEngine, type Engine } from "./engine.js";
import { closestNames, thrownError, type ThrownInfo } from "./errors.js";
import { Stop, type DoneMessage, type Finished, type IdleMessage, type WorkerMessage } from "./protocol.js";

export { MAX_STACK_BYTES } from "./vm.js";

/** Extra host functions by namespace, e.g. `{ memory: { search } }` → `memory.search(...)` in the code. */
export type Namespaces = Record<string, Record<string, (args: unknown[]) => Promise<unknown>>>;

export interface RunOptions {
  /** Cancels the step (Ctrl-C): it ends with SANDBOX_CANCELLED and its tool calls are aborted. */
  signal?: AbortSignal;
  /**
   * Host functions beside the tools. Each call counts against max_tool_calls (it is host work the code asks
   * for, as a tool call is) but is not recorded in tool_calls.
   */
  namespaces?: Namespaces;
  /** Each console line as it is written. */
  onLog?: (line: string) => void;
  /**
   * Milliseconds the step has spent so far waiting on a person (an approval asked from inside a tool call).
   * Only the part that falls while the sandbox is idle (awaiting host calls, no jobs to run) is left out of
   * timeout_ms: a person thinking is not the code running long, but code computing meanwhile is.
   */
  heldMs?: () => number;
  /** Seeds the step's Math.random: the same seed gives the same numbers (a step replayed after a resume). */
  seed?: number;
}

/**
 * How long a step told to stop (Ctrl-C, its deadline) may take to do so before its thread is terminated. The
 * interrupt handler runs every few thousand bytecodes, so this is only reached by a native built-in working on
 * a huge input (sorting 60 MB) or a machine too busy to schedule the thread.
 */
export const STOP_GRACE_MS = 250;

const UNDEFINED_TEXT = encode(undefined);

/** Longest call name the host looks up; longer ones cannot name a tool and get no "did you mean" search. */
const MAX_NAME_CHARS = 512;
/**
 * The readings a durable step's code may log with one call: the prelude sends at most ~64K characters at a time
 * (~4,500 distinct milliseconds), and a few such runs may come before a call.
 */
const MAX_CLOCK_CHARS = 256 << 10;
const CLOCK_READINGS = /^\d{1,15}(,-?\d{1,15})*$/;
/** Deepest nesting of a call's arguments: the host's checks and the hub's serialising recurse over them. */
const MAX_ARG_DEPTH = 128;

interface Pending {
  namespace: boolean;
  info?: ToolInfo;
  /** performance.now() when the call started. */
  started: number;
}

interface Ready {
  id: number;
  ok: boolean;
  text: string;
}

/**
 * The outcomes the engine hands the code (the config's `replay`, prelude.ts), as columns by call position:
 * `kind` 1 (the logged value; 2 when it holds "$pda" tags to revive) or 0 (the logged error, {code, tool,
 * message}), or -1 where the call must reach the host; `value` the value inline as JSON, so the engine parses
 * it once with the config rather than once more per call; where the log has the call whole, `name` the index
 * of its name in `names` and `args` its arguments' JSON (one object), which the engine compares with a call's
 * one argument as JSON.stringify writes it (keys in sorted order); else -1 and 0. Columns, as QuickJS parses
 * an array per call at twice the cost of the values in it. The texts are valid JSON (the journal parsed each,
 * or encode made it), so each fills its place and no more. The first that cannot cross (not encodable, too
 * large) ends the list: from there the host replays, and says why the way a live call would.
 */
function replayJson(outcomes: readonly (ReplayOutcome | null)[], maxChars: number): string {
  const kinds: number[] = [];
  const values: string[] = [];
  const nameAt: number[] = [];
  const args: string[] = [];
  const nameIndex = new Map<string, number>();
  for (const o of outcomes) {
    if (o === null) {
      kinds.push(-1);
      values.push("0");
      nameAt.push(-1);
      args.push("0");
      continue;
    }
    if (!o.ok) {
      kinds.push(0);
      values.push(JSON.stringify({ code: o.code, tool: o.tool, message: o.message }));
    } else {
      const given = "text" in o;
      let text: string;
      try {
        text = given ? o.text : encode(o.value);
      } catch {
        break;
      }
      if (text.length > maxChars) break;
      kinds.push(!given && text.includes(TAG) ? 2 : 1);
      values.push(text);
    }
    if (o.logged) {
      let at = nameIndex.get(o.logged.name);
      if (at === undefined) nameIndex.set(o.logged.name, (at = nameIndex.size));
      nameAt.push(at);
      args.push(JSON.stringify(o.logged.argsJson));
    } else {
      nameAt.push(-1);
      args.push("0");
    }
  }
  let n = kinds.length;
  while (n > 0 && kinds[n - 1] === -1) n--;
  const column = (xs: (number | string)[]) => (n === xs.length ? xs : xs.slice(0, n)).join(",");
  const names = JSON.stringify([...nameIndex.keys()]);
  return `{"kind":[${column(kinds)}],"value":[${column(values)}],"name":[${column(nameAt)}],"names":${names},"args":[${column(args)}]}`;
}

/** A name from the sandbox as error messages show it: cut, since the code may send megabytes. */
function shown(name: string): string {
  return name.length > 200 ? `${name.slice(0, 200)}…` : name;
}

/** Where the engine is: running code, waiting for the host (`idle`), or told to end. */
type Phase = "running" | "idle" | "ending";

class StepRun {
  private readonly started = performance.now();
  /** Date.now() + timeout_ms when the engine was ready: starting a worker thread is not the code's time. */
  private deadline = 0;
  private readonly logs: string[] = [];
  private readonly calls: ToolCallRecord[] = [];
  private readonly callStarts: number[] = [];
  /**
   * Aborted when the step ends with calls still running. One for all the step's calls: hosts must cancel
   * only the calls still in flight (the hub keeps one listener per signal, see mcp_servers/hub/cancel.ts).
   * Made with the first live call: a step that calls nothing, or only replays, needs none.
   */
  private callsAbort?: AbortController;
  private callCount = 0;
  /** Tool calls the code has made so far (in its order, invalid ones too): the next call's `seq`. */
  private toolSeq = 0;
  /**
   * A durable step (its host logs calls): the logged outcomes and clock readings the engine hands the code
   * itself (prelude.ts), none on a first run.
   */
  private readonly replay?: StepReplay;
  /** Clock readings the code took (a durable step's), to go with the next tool call that reaches the host. */
  private clock = "";
  /** Calls the engine answered from the log, checked and logged together before the next call starts. */
  private replayed: ReplayedCall[] = [];
  private readonly pending = new Map<number, Pending>();
  private ready: Ready[] = [];
  /** Why the host ended the step (the engine's own reasons come in its `done`). */
  private fatal?: StepError;
  private finished?: Finished;
  private closed = false;
  private phase: Phase = "running";
  /** Held time (RunOptions.heldMs) that fell while the sandbox was idle: the deadline moves on by this. */
  private heldCredit = 0;
  /** heldMs() when the current idle wait began; undefined while the sandbox runs. */
  private idleHeldFrom?: number;
  private readonly byName = new Map<string, ToolInfo>();
  /** "ns.fn" → the host function: own entries only, so no name reaches Object.prototype or a constructor. */
  private readonly nsFunctions = new Map<string, (args: unknown[]) => Promise<unknown>>();
  private readonly tools: ToolInfo[];
  /** The tools' and namespaces' names in the code (core/tool-names.ts). */
  private readonly names: JsNames;
  /** What the prelude binds (prelude.ts's bind), as JSON. */
  private readonly toolsJson: string;
  private lineCount = 1;
  private engine?: Engine;
  /** Set from the engine's `done`: the step used up its heap (see vm.ts heapExhausted). */
  private exhausted = false;
  private timer?: NodeJS.Timeout;
  private graceTimer?: NodeJS.Timeout;
  private resolve?: (done: DoneMessage) => void;

  constructor(
    private readonly host: ToolHost,
    private readonly limits: SandboxLimits,
    private readonly options: RunOptions,
  ) {
    this.tools = host.tools();
    for (const t of this.tools) {
      this.byName.set(t.qualified, t);
      if (t.unique) this.byName.set(t.name, t);
    }
    for (const [ns, fns] of Object.entries(options.namespaces ?? {}))
      for (const [name, fn] of Object.entries(fns))
        if (typeof fn === "function") this.nsFunctions.set(`${ns}.${name}`, fn);
    const binding = toolBinding(this.tools, this.nsByGroup());
    this.names = binding.names;
    this.toolsJson = binding.json;
    this.replay = host.replay?.();
  }

  async run(code: string): Promise<ExecutionResult> {
    const { signal } = this.options;
    if (signal?.aborted)
      return this.result({ code: "SANDBOX_CANCELLED", message: "the step was cancelled before it started" });
    this.lineCount = code.split("\n").length;
    try {
      this.engine = await acquireEngine(this.limits.memory_bytes);
    } catch (e) {
      return this.result({
        code: "SANDBOX_RUNTIME",
        message: `the sandbox engine failed: ${errorMessage(e)}`,
      });
    }
    const engine = this.engine;
    this.deadline = Date.now() + this.limits.timeout_ms;
    const onAbort = () => this.onAbort();
    signal?.addEventListener("abort", onAbort);
    let done: DoneMessage;
    try {
      done = await new Promise<DoneMessage>((resolve) => {
        this.resolve = resolve;
        engine.listen({ message: (msg) => this.onMessage(msg), failed: (why) => this.engineDied(why) });
        engine.send({
          t: "start",
          code,
          limits: this.limits,
          tools: this.toolsJson,
          config: this.preludeConfig(),
          names: this.knownNames(),
          dueAt: this.dueAt(),
        });
        this.arm(0);
        if (signal?.aborted) this.onAbort();
      });
    } finally {
      signal?.removeEventListener("abort", onAbort);
      clearTimeout(this.timer);
      clearTimeout(this.graceTimer);
    }
    this.finished ??= done.finished;
    if (done.calls) this.startCalls(done.calls);
    this.exhausted = done.exhausted;
    engine.memoryBytes = done.memoryBytes;
    if (done.poisoned || done.exhausted) engine.poisoned = true;
    this.tearDown();
    releaseEngine(engine);
    return this.result(this.fatal ?? done.fatal);
  }

  // --- the engine's side ----------------------------------------------------------------------------------

  private onMessage(msg: WorkerMessage): void {
    switch (msg.t) {
      case "log":
        this.logs.push(msg.line);
        this.options.onLog?.(msg.line);
        return;
      case "idle":
        return this.onIdle(msg);
      case "done":
        return this.end(msg);
    }
  }

  /**
   * The code has nothing to run until calls settle: start the calls it made, then give it what has already
   * settled or wait (the time a person is asked now moves the deadline on).
   */
  private onIdle(msg: IdleMessage): void {
    this.finished ??= msg.finished;
    // A STOP crossed this message: the engine ends the step on its own.
    if (this.phase !== "running") return;
    if (msg.calls) this.startCalls(msg.calls);
    if (this.fatal) return this.finish();
    if (this.ready.length > 0) return this.settle();
    if (this.options.signal?.aborted) return this.cancel();
    if (this.overdue()) return this.timeUp();
    this.phase = "idle";
    this.idleHeldFrom = this.held();
  }

  /** Hand the settled calls to the engine, which runs again. */
  private settle(): void {
    if (this.phase === "idle") {
      this.heldCredit += this.held() - this.idleHeldFrom!;
      this.idleHeldFrom = undefined;
      if (this.options.signal?.aborted) return this.cancel();
      this.phase = "running";
    }
    const ready = this.ready;
    this.ready = [];
    this.engine!.send({
      t: "settle",
      ids: ready.map((r) => r.id),
      oks: ready.map((r) => (r.ok ? 1 : 0)),
      texts: ready.map((r) => r.text),
      dueAt: this.dueAt(),
    });
  }

  /** A call settled (ready grew): an idle engine gets it at once, a running one when it next idles. */
  private notify(): void {
    if (this.phase === "idle") this.settle();
  }

  private onAbort(): void {
    if (this.phase === "idle") this.cancel();
    else if (this.phase === "running") this.stop(Stop.cancel);
  }

  /**
   * Armed for the deadline; while a person is being asked it moves on, so look again later (not sooner than
   * 25 ms: a wait that began near the deadline must not spin the timer).
   */
  private arm(min: number): void {
    const wait = Math.max(min, this.dueAt() - Date.now() + 1);
    this.timer = setTimeout(() => {
      if (!this.overdue()) return this.arm(25);
      if (this.phase === "idle") this.timeUp();
      else if (this.phase === "running") this.stop(Stop.timeout);
    }, wait);
  }

  /**
   * The code is running: the engine stops it (its interrupt handler reads the STOP word); one that has not
   * within STOP_GRACE_MS has its thread terminated.
   */
  private stop(reason: typeof Stop.cancel | typeof Stop.timeout): void {
    // The phase stays: calls the engine reports before it sees the word are started and then, as the step
    // ends, aborted and recorded so, as when the step is stopped while it waits.
    this.engine!.stop(reason);
    this.graceTimer ??= setTimeout(() => {
      const fatal: StepError =
        reason === Stop.cancel
          ? { code: "SANDBOX_CANCELLED", message: "the step was cancelled" }
          : this.timeoutError();
      this.engine!.terminate();
      this.end({ t: "done", fatal, exhausted: false, poisoned: true, memoryBytes: this.engine!.memoryBytes });
    }, STOP_GRACE_MS);
  }

  /** The engine waits: tell it the step is over, and take its `done`. */
  private finish(): void {
    this.phase = "ending";
    this.engine!.send({ t: "end" });
    this.graceTimer ??= setTimeout(() => {
      this.engine!.terminate();
      this.end({ t: "done", exhausted: false, poisoned: true, memoryBytes: this.engine!.memoryBytes });
    }, STOP_GRACE_MS);
  }

  private engineDied(why: string): void {
    this.end({
      t: "done",
      fatal: { code: "SANDBOX_RUNTIME", message: `the sandbox engine failed: ${why}` },
      exhausted: false,
      poisoned: true,
      memoryBytes: this.engine!.memoryBytes,
    });
  }

  private end(done: DoneMessage): void {
    this.phase = "ending";
    const resolve = this.resolve;
    this.resolve = undefined;
    resolve?.(done);
  }

  /** Namespace id → its function names. */
  private nsByGroup(): Map<string, string[]> {
    const fns = new Map<string, string[]>();
    for (const key of this.nsFunctions.keys()) {
      const dot = key.indexOf(".");
      const id = key.slice(0, dot);
      fns.set(id, [...(fns.get(id) ?? []), key.slice(dot + 1)]);
    }
    return fns;
  }

  /** The prelude's config for this step (prelude.ts begin), as JSON. */
  private preludeConfig(): string {
    const config = JSON.stringify({
      maxLogChars: this.limits.max_log_bytes,
      maxResultChars: this.limits.max_result_bytes,
      maxToolCalls: this.limits.max_tool_calls,
      // A QuickJS value takes 8 bytes in a wasm32 array: no real array of this step is longer.
      maxArrayLength: Math.floor(this.limits.memory_bytes / 8),
      seed: this.options.seed,
    });
    if (!this.replay) return config;
    // Spliced in as they are: the values are JSON already (replayJson), the readings numbers.
    const replay =
      this.replay.outcomes.length === 0
        ? ""
        : `,"replay":${replayJson(this.replay.outcomes, this.limits.memory_bytes / 4)}`;
    return `${config.slice(0, -1)},"clock":[${this.replay.clock}]${replay}}`;
  }

  private held(): number {
    return this.options.heldMs?.() ?? 0;
  }

  /**
   * The deadline, moved on by the time a person was being asked while the sandbox sat idle. A question opened
   * by a call while the code goes on computing (`const p = transfer(1); await null; while (true) {}`) does not
   * move it: the credit is frozen whenever the sandbox runs.
   */
  private dueAt(): number {
    const open = this.idleHeldFrom === undefined ? 0 : this.held() - this.idleHeldFrom;
    return this.deadline + this.heldCredit + open;
  }

  private overdue(): boolean {
    return Date.now() > this.dueAt();
  }

  /** Cancelled while the engine waits. */
  private cancel(): void {
    if (!this.finished) this.fatal ??= { code: "SANDBOX_CANCELLED", message: "the step was cancelled" };
    this.finish();
  }

  /** Overdue while the engine waits. */
  private timeUp(): void {
    // Code that already returned keeps its value; calls it left running are aborted (and recorded so).
    if (!this.finished) this.fatal ??= this.timeoutError();
    this.finish();
  }

  private timeoutError(): StepError {
    return {
      code: "SANDBOX_TIMEOUT",
      message: `the step ran longer than ${this.limits.timeout_ms} ms (limit timeout_ms)`,
    };
  }

  /** The calls the code made since it last idled (prelude.ts's outbox): checked, counted and started. */
  private startCalls(text: string): void {
    for (const request of text.split("\x02")) {
      const [id, kind, name, json] = request.split("\x01");
      if (kind === "3" && name === undefined) {
        if (!this.matchedLog(id ?? "")) return;
        continue;
      }
      if (kind === "4" && name === undefined) {
        this.tookClock(id ?? "");
        continue;
      }
      let tool: unknown;
      try {
        tool = JSON.parse(name ?? "");
      } catch {
        tool = undefined;
      }
      if (
        typeof tool !== "string" ||
        json === undefined ||
        !/^[1-9]\d{0,14}$/.test(id ?? "") ||
        (kind !== "0" && kind !== "1" && kind !== "2") ||
        (kind === "2" && !this.replay?.outcomes[this.toolSeq])
      ) {
        this.fatal ??= { code: "SANDBOX_RUNTIME", message: "the sandbox sent a malformed tool call" };
        return;
      }
      if (!this.countCall(tool)) break;
      if (kind === "2") {
        this.answeredFromLog(tool, json);
        continue;
      }
      // Logged first: a live call's intent must not wait on (or join) the replayed calls' write.
      this.confirmReplayed();
      if (kind === "1") this.startNamespaceCall(Number(id), tool, json);
      else this.startToolCall(Number(id), tool, json);
    }
    this.confirmReplayed();
  }

  /**
   * `count` calls the engine answered with their logged outcomes, each the logged call (the engine compared
   * their arguments' JSON with the log's): counted, and confirmed as the log's own calls. False when the engine
   * claims positions the log has no call to compare with (the step ends).
   */
  private matchedLog(count: string): boolean {
    const outcomes = this.replay?.outcomes;
    const n = /^[1-9]\d{0,14}$/.test(count) ? Number(count) : 0;
    if (!outcomes || n === 0 || this.toolSeq + n > outcomes.length) {
      this.fatal ??= { code: "SANDBOX_RUNTIME", message: "the sandbox sent a malformed tool call" };
      return false;
    }
    // Answered at once, all at this time: one clock reading for the run.
    const at = performance.now();
    for (let i = 0; i < n; i++) {
      const seq = this.toolSeq;
      const outcome = outcomes[seq];
      const info = outcome?.logged && this.byName.get(outcome.logged.name);
      if (!outcome?.logged) {
        this.fatal ??= { code: "SANDBOX_RUNTIME", message: "the sandbox sent a malformed tool call" };
        return false;
      }
      if (!this.countCall(outcome.logged.name)) return false;
      this.toolSeq++;
      this.replayed.push({ seq, asLogged: true });
      if (info) this.recordLogged(info, outcome, at);
    }
    return true;
  }

  /**
   * Clock readings the code took (prelude.ts clockNow), in order: numbers, a run of one value as the value then
   * -(repeats). Past MAX_CLOCK_CHARS they are dropped (code that reads the clock in a loop for long): a replay
   * then reads the real clock there, as it would with no log.
   */
  private tookClock(text: string): void {
    if (!this.replay || !CLOCK_READINGS.test(text) || this.clock.length + text.length > MAX_CLOCK_CHARS)
      return;
    this.clock = this.clock === "" ? text : `${this.clock},${text}`;
  }

  /** A call the engine answered with its logged outcome: what it asks for now, to check against the log. */
  private answeredFromLog(name: string, json: string): void {
    const seq = this.toolSeq++;
    const outcome = this.replay?.outcomes[seq];
    const info = name.length <= MAX_NAME_CHARS ? this.byName.get(name) : undefined;
    let call: ReplayedCall["call"];
    if (info) {
      try {
        const fn = this.names.tools.get(info.qualified)?.call;
        call = {
          name: info.qualified,
          args: toolArguments(info, this.decodeArgs(info.qualified, json), !json.includes(TAG), fn),
        };
      } catch {
        call = undefined; // not a call any tool takes now: the log holds one, so the step took another path
      }
    }
    this.replayed.push({ seq, call });
    if (info && outcome) this.recordLogged(info, outcome, performance.now());
  }

  /** The step's record of a call answered from the log: no time, the logged outcome. */
  private recordLogged(info: ToolInfo, outcome: ReplayOutcome, at: number): void {
    const error = outcome.ok
      ? undefined
      : new ToolError(outcome.code as ToolErrorCode, outcome.tool, outcome.message);
    this.record(info, at, outcome.ok, 0, error, 0);
  }

  private confirmReplayed(): void {
    if (this.replayed.length === 0) return;
    const calls = this.replayed;
    this.replayed = [];
    try {
      this.replay!.confirm(calls);
    } catch (e) {
      this.fatal ??= {
        code: "SANDBOX_RUNTIME",
        message: `logging the replayed calls failed: ${errorMessage(e)}`,
      };
    }
  }

  // --- host side of the calls -----------------------------------------------------------------------------

  private knownNames(): string[] {
    const names: string[] = [];
    for (const t of this.tools) {
      names.push(t.qualified);
      if (t.unique) names.push(t.name);
    }
    names.push(...this.nsFunctions.keys());
    return names;
  }

  /** One more call (tool or namespace) against max_tool_calls; false (and the step ends) past it. */
  private countCall(name: string): boolean {
    if (this.callCount >= this.limits.max_tool_calls) {
      // The prelude stops the code at the same count; this holds even if the code broke the prelude.
      this.fatal ??= this.toolLimitError(shown(name));
      return false;
    }
    this.callCount++;
    return true;
  }

  /**
   * The call's arguments, decoded — or a TOOL_INVALID_ARGS ToolError — after the checks that bound the host's work on them: their size (as a
   * result's, a quarter of the step's memory) and their nesting.
   */
  private decodeArgs(name: string, json: string): unknown[] {
    const invalid = (why: string) => new ToolError("TOOL_INVALID_ARGS", name, `${name}: ${why}`);
    const max = this.limits.memory_bytes / 4;
    if (json.length > max)
      throw invalid(`the arguments are ${json.length} characters of JSON, more than ${max} allowed`);
    if (json.length > 2 * MAX_ARG_DEPTH && jsonDepth(json) > MAX_ARG_DEPTH)
      throw invalid(`the arguments nest deeper than ${MAX_ARG_DEPTH} levels`);
    let decoded: unknown;
    try {
      decoded = decode(json);
    } catch (e) {
      throw invalid(errorMessage(e));
    }
    return Array.isArray(decoded) ? decoded : [decoded];
  }

  private toolLimitError(tool: string): StepError {
    return {
      code: "SANDBOX_TOOL_LIMIT",
      message: `the step tried to make more than ${this.limits.max_tool_calls} tool calls (limit max_tool_calls)`,
      tool,
    };
  }

  private fail(id: number, error: { code: string; tool: string; message: string }): void {
    this.ready.push({ id, ok: false, text: JSON.stringify(error) });
  }

  private startToolCall(id: number, name: string, json: string): void {
    const seq = this.toolSeq++;
    const info = name.length <= MAX_NAME_CHARS ? this.byName.get(name) : undefined;
    if (!info) {
      const near = closestNames(name, this.knownNames());
      const ambiguous = this.tools.filter((t) => t.name === name).map((t) => t.qualified);
      const message = ambiguous.length
        ? `tool name "${name}" is ambiguous; use one of: ${ambiguous.join(", ")}`
        : `no tool named "${shown(name)}"${near.length ? `; closest: ${near.join(", ")}` : ""}`;
      this.fail(id, { code: "TOOL_NOT_FOUND", tool: shown(name), message });
      return;
    }
    const started = performance.now();
    let args: Record<string, unknown>;
    try {
      const call = this.names.tools.get(info.qualified)?.call;
      args = toolArguments(info, this.decodeArgs(info.qualified, json), !json.includes(TAG), call);
    } catch (e) {
      const error =
        e instanceof ToolError
          ? e
          : new ToolError("TOOL_INVALID_ARGS", info.qualified, `${info.qualified}: ${errorMessage(e)}`);
      this.record(info, started, false, 0, error);
      this.fail(id, { code: error.code, tool: info.qualified, message: error.message });
      return;
    }
    let promise: Promise<unknown>;
    try {
      const clock = this.clock;
      this.clock = "";
      promise = this.host.call(info.qualified, args, {
        signal: this.callSignal(),
        seq,
        ...(clock && { clock }),
      });
    } catch (e) {
      promise = Promise.reject(e);
    }
    // After the call, not before: the request is out sooner (a host settles asynchronously, never before this).
    this.pending.set(id, { namespace: false, info, started });
    promise.then(
      (value) => this.toolSettled(id, value),
      (e) => this.toolFailed(id, e),
    );
  }

  private toolSettled(id: number, value: unknown): void {
    const p = this.pending.get(id);
    if (!p || this.closed) return;
    this.pending.delete(id);
    let text: string;
    try {
      text = encode(value);
    } catch (e) {
      this.toolFailed(
        id,
        new ToolError(
          "TOOL_ERROR",
          p.info!.qualified,
          `${p.info!.qualified}: its result cannot be sent to the sandbox: ${errorMessage(e)}`,
        ),
        p,
      );
      return;
    }
    const bytes = Buffer.byteLength(text);
    // A result that could not fit in the sandbox's memory is refused here rather than crashing the step.
    if (text.length > this.limits.memory_bytes / 4) {
      const error = new ToolError(
        "TOOL_RESULT_TOO_LARGE",
        p.info!.qualified,
        `${p.info!.qualified}: its result (${bytes} bytes) is too large for the sandbox's memory`,
      );
      this.record(p.info!, p.started, false, bytes, error);
      this.fail(id, { code: error.code, tool: error.tool, message: error.message });
    } else {
      this.record(p.info!, p.started, true, bytes);
      this.ready.push({ id, ok: true, text });
    }
    this.notify();
  }

  private toolFailed(id: number, e: unknown, known?: Pending): void {
    const p = known ?? this.pending.get(id);
    if (!p || this.closed) return;
    this.pending.delete(id);
    const tool = p.info!.qualified;
    const error =
      e instanceof ToolError ? e : new ToolError("TOOL_ERROR", tool, `${tool}: ${errorMessage(e)}`);
    this.record(p.info!, p.started, false, 0, error);
    this.fail(id, { code: error.code, tool: error.tool || tool, message: error.message });
    this.notify();
  }

  private startNamespaceCall(id: number, name: string, json: string): void {
    const fn = this.nsFunctions.get(name);
    if (!fn) {
      const message = `no function named "${shown(name)}"`;
      this.fail(id, { code: "TOOL_NOT_FOUND", tool: shown(name), message });
      return;
    }
    let args: unknown[];
    try {
      args = this.decodeArgs(name, json);
    } catch (e) {
      const error = e as ToolError;
      this.fail(id, { code: error.code, tool: name, message: error.message });
      return;
    }
    this.pending.set(id, {
      namespace: true,
      started: performance.now(),
    });
    let promise: Promise<unknown>;
    try {
      promise = Promise.resolve(fn(args));
    } catch (e) {
      promise = Promise.reject(e);
    }
    promise.then(
      (value) => {
        if (this.closed || !this.pending.delete(id)) return;
        try {
          this.ready.push({ id, ok: true, text: encode(value) });
        } catch (e) {
          this.fail(id, {
            code: "TOOL_ERROR",
            tool: name,
            message: `${name}: its result cannot be sent to the sandbox: ${errorMessage(e)}`,
          });
        }
        this.notify();
      },
      (e) => {
        if (this.closed || !this.pending.delete(id)) return;
        const code =
          typeof (e as { code?: unknown })?.code === "string" ? (e as { code: string }).code : "TOOL_ERROR";
        this.fail(id, { code, tool: name, message: `${name}: ${errorMessage(e)}` });
        this.notify();
      },
    );
  }

  private record(
    info: ToolInfo,
    started: number,
    ok: boolean,
    bytes: number,
    error?: ToolError,
    latencyMs = performance.now() - started,
  ): void {
    const record: ToolCallRecord = {
      server: info.server,
      tool: info.name,
      ok,
      latency_ms: latencyMs,
      bytes,
      // Filled in when the result is made: formatting a date on every call is not free.
      started_at: "",
    };
    if (error) {
      record.error_kind = error.code;
      record.error_message = error.message;
    }
    this.calls.push(record);
    this.callStarts.push(started);
  }

  // --- the end --------------------------------------------------------------------------------------------

  /** Calls still running belong to a step that is over: abort them and record them as such. */
  private tearDown(): void {
    this.closed = true;
    if (this.pending.size === 0) return;
    const fatal = this.fatal;
    const why = fatal?.code ?? "the step ended";
    const reason = new Error(`the sandbox step ended (${fatal?.code ?? "finished"})`);
    for (const p of this.pending.values()) {
      if (p.info)
        this.record(
          p.info,
          p.started,
          false,
          0,
          new ToolError("TOOL_CANCELLED", p.info.qualified, `${p.info.qualified}: aborted because ${why}`),
        );
    }
    this.pending.clear();
    this.callsAbort?.abort(reason);
  }

  private callSignal(): AbortSignal {
    if (!this.callsAbort) {
      this.callsAbort = new AbortController();
      // A host may listen per call while the call runs (the in-process one does), and parallel() may put many
      // calls under way; more than this at once is more likely a host that leaves its listeners behind.
      setMaxListeners(64, this.callsAbort.signal);
    }
    return this.callsAbort.signal;
  }

  private result(fatal?: StepError): ExecutionResult {
    const r = this.outcome(fatal);
    // Out of memory, QuickJS may throw null or fail later in some other way; name the cause.
    if (!r.ok && this.exhausted && r.error?.code === "SANDBOX_RUNTIME") {
      r.error = { code: "SANDBOX_MEMORY", message: `the step ran out of memory (then: ${r.error.message})` };
    }
    return r;
  }

  private outcome(error?: StepError): ExecutionResult {
    // Calls answered from the log share one start: formatted once.
    let lastStart = NaN;
    let lastIso = "";
    this.calls.forEach((c, i) => {
      const start = this.callStarts[i]!;
      if (start !== lastStart) {
        lastStart = start;
        lastIso = new Date(performance.timeOrigin + start).toISOString();
      }
      c.started_at = lastIso;
    });
    const base = { logs: this.logs, tool_calls: this.calls, duration_ms: performance.now() - this.started };
    if (error) return { ok: false, error, ...base };
    const done = this.finished;
    if (!done)
      return {
        ok: false,
        error: { code: "SANDBOX_RUNTIME", message: "the step ended without a result" },
        ...base,
      };
    if (done.status === 1) {
      const bytes = Buffer.byteLength(done.text);
      if (bytes > this.limits.max_result_bytes) return { ok: false, error: this.tooLarge(bytes), ...base };
      // No value at all (the code returned nothing) is an absent `value`, not an "undefined" tag.
      if (done.text === UNDEFINED_TEXT) return { ok: true, ...base };
      return { ok: true, value: JSON.parse(done.text), ...base };
    }
    if (done.status === 2) return { ok: false, error: this.tooLarge(Number(done.text)), ...base };
    let info: ThrownInfo;
    try {
      info = JSON.parse(done.text) as ThrownInfo;
    } catch {
      info = { name: "Error", message: "the step failed with an error that could not be read" };
    }
    return {
      ok: false,
      error: thrownError(info, this.lineCount, () => this.knownNames(), isToolErrorCode),
      ...base,
    };
  }

  private tooLarge(size: number): StepError {
    return {
      code: "SANDBOX_RESULT_TOO_LARGE",
      message: `the step's return value is ${size} bytes as JSON, over the ${this.limits.max_result_bytes}-byte limit (max_result_bytes); return less, e.g. a summary or a slice`,
    };
  }
}

/**
 * Run one CODE step. `host.tools()` become async functions (plain name when unique, always `server.tool`);
 * the value the code returns is `value` (tagged JSON, see codec.ts). Never throws for anything the code does:
 * every failure is `ok: false` with a typed `error`.
 */
/**
 * jsNames and the prelude's tool JSON, made once per tool list and namespace set: hosts hand out the same array
 * until their list changes (the hub builds a new one), and the same JSON text lets the engine reuse the image
 * with those tools bound (warm.ts).
 */
const bindings = new WeakMap<readonly ToolInfo[], Map<string, { names: JsNames; json: string }>>();

function toolBinding(
  tools: readonly ToolInfo[],
  ns: Map<string, string[]>,
): { names: JsNames; json: string } {
  const nsKey = ns.size === 0 ? "" : JSON.stringify([...ns]);
  let byNs = bindings.get(tools);
  if (!byNs) bindings.set(tools, (byNs = new Map()));
  let made = byNs.get(nsKey);
  if (!made) {
    const names = jsNames(tools, [...ns.keys()]);
    const json = JSON.stringify({
      tools: tools.map((t) => {
        const n = names.tools.get(t.qualified)!;
        return { q: t.qualified, sid: t.server, s: n.group, n: t.name, m: n.member, g: n.global };
      }),
      ns: [...ns].map(([id, f]) => ({ id, g: names.groups.get(id)!, f })),
    });
    made = { names, json };
    // Namespaces are per run; a long-lived list must not collect one entry per run.
    if (byNs.size >= 8) byNs.clear();
    byNs.set(nsKey, made);
  }
  return made;
}

export async function runCode(
  code: string,
  host: ToolHost,
  limits: SandboxLimits,
  options: RunOptions = {},
): Promise<ExecutionResult> {
  return new StepRun(host, limits, options).run(code);
}
