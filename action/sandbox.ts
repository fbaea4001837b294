/**
 * runCode: one CODE step in a fresh QuickJS runtime and context (WebAssembly, the synchronous release build).
 * The code sees tool functions, `ToolError`, `parallel`, `callTool` and `console` (prelude.ts); tool calls are
 * host promises settled by this file's event loop. Every limit ends the step with a typed StepError; nothing
 * the code does throws out of runCode.
 */
import { setMaxListeners } from "node:events";
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime } from "quickjs-emscripten-core";
import type { SandboxLimits } from "../config/index.js";
import {
  ToolError,
  errorMessage,
  jsNames,
  type ExecutionResult,
  type JsNames,
  type StepError,
  type ToolCallRecord,
  type ToolHost,
  type ToolInfo,
} from "../core/index.js";
import { toolArguments } from "./args.js";
import { TAG, decode, encode, jsonDepth } from "./codec.js";
import { acquireEngine, heapExhausted, releaseEngine, type Engine } from "./engine.js";
import { FastLane } from "./fast.js";
import { CODE_FILE, closestNames, syntaxError, thrownError, type ThrownInfo } from "./errors.js";
import { PRELUDE, PRELUDE_COLD, PRELUDE_FILE } from "./prelude.js";

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
}

/**
 * QuickJS's recursion limit, whatever `stack_bytes` asks for. The interpreter runs on Node's own native stack
 * (~1 MB); past about 300 KB of QuickJS stack, JavaScript recursion through native helpers (Array.map,
 * getters, sort) overflows it before QuickJS notices. 256 KB still allows ~1,100 plain recursive calls.
 */
export const MAX_STACK_BYTES = 256 << 10;

const UNDEFINED_TEXT = encode(undefined);

/** Longest call name the host looks up; longer ones cannot name a tool and get no "did you mean" search. */
const MAX_NAME_CHARS = 512;
/** Deepest nesting of a call's arguments: the host's checks and the hub's serialising recurse over them. */
const MAX_ARG_DEPTH = 128;

const LEVEL_PREFIX: Record<string, string> = { warn: "[warn] ", error: "[error] ", debug: "[debug] " };

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

/** A name from the sandbox as error messages show it: cut, since the code may send megabytes. */
function shown(name: string): string {
  return name.length > 200 ? `${name.slice(0, 200)}…` : name;
}

/** V8's own stack overflow, thrown through the WebAssembly frames. */
function isNativeStackOverflow(e: unknown): boolean {
  return e instanceof RangeError && /call stack size/i.test(e.message);
}

class StepRun {
  private readonly started = performance.now();
  private readonly deadline: number;
  private readonly logs: string[] = [];
  private logBytes = 0;
  private readonly calls: ToolCallRecord[] = [];
  private readonly callStarts: number[] = [];
  /**
   * Aborted when the step ends with calls still running. One for all the step's calls: hosts must cancel
   * only the calls still in flight (the hub keeps one listener per signal, see mcp_servers/hub/cancel.ts).
   */
  private readonly callsAbort = new AbortController();
  private callCount = 0;
  private readonly pending = new Map<number, Pending>();
  private ready: Ready[] = [];
  private fatal?: StepError;
  private finished?: { status: number; text: string };
  private wake?: () => void;
  private closed = false;
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
  private lineCount = 1;
  private engine?: Engine;
  private rt?: QuickJSRuntime;
  private ctx?: QuickJSContext;
  private readonly handles: QuickJSHandle[] = [];
  private settleFn?: QuickJSHandle;
  private collectFn?: QuickJSHandle;
  private fast?: FastLane;

  constructor(
    private readonly host: ToolHost,
    private readonly limits: SandboxLimits,
    private readonly options: RunOptions,
  ) {
    this.deadline = Date.now() + limits.timeout_ms;
    // A host may listen per call while the call runs (the in-process one does), and parallel() may put many
    // calls under way; more than this at once is more likely a host that leaves its listeners behind.
    setMaxListeners(64, this.callsAbort.signal);
    this.tools = host.tools();
    for (const t of this.tools) {
      this.byName.set(t.qualified, t);
      if (t.unique) this.byName.set(t.name, t);
    }
    for (const [ns, fns] of Object.entries(options.namespaces ?? {}))
      for (const [name, fn] of Object.entries(fns))
        if (typeof fn === "function") this.nsFunctions.set(`${ns}.${name}`, fn);
    this.names = jsNames(this.tools, [...this.nsByGroup().keys()]);
  }

  async run(code: string): Promise<ExecutionResult> {
    const { signal } = this.options;
    if (signal?.aborted)
      return this.result({ code: "SANDBOX_CANCELLED", message: "the step was cancelled before it started" });
    const onAbort = () => this.notify();
    signal?.addEventListener("abort", onAbort);
    let timer: NodeJS.Timeout | undefined;
    // Armed for the deadline; while a person is being asked the deadline moves on, so look again later (not
    // sooner than 25 ms: a wait that began near the deadline must not spin the timer).
    const arm = (min: number) => {
      const wait = Math.max(min, this.dueAt() - Date.now() + 1);
      timer = setTimeout(() => (this.overdue() ? this.notify() : arm(25)), wait);
    };
    arm(0);
    try {
      this.engine = await acquireEngine(this.limits.memory_bytes);
      this.lineCount = code.split("\n").length;
      if (this.setUp(code)) await this.loop();
    } catch (e) {
      this.engineFailure(e);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      this.tearDown();
    }
    return this.result(this.fatal);
  }

  /** Set in tearDown: the step used up its heap (see heapExhausted). */
  private exhausted = false;

  // --- set-up ---------------------------------------------------------------------------------------------

  /** Fresh runtime + context, prelude, tool bindings, the code compiled and started. False when it ended. */
  private setUp(code: string): boolean {
    const rt = this.engine!.module.newRuntime();
    this.rt = rt;
    rt.setMemoryLimit(this.limits.memory_bytes);
    rt.setMaxStackSize(Math.min(this.limits.stack_bytes, MAX_STACK_BYTES));
    rt.setInterruptHandler(() => this.interrupt());
    const ctx = rt.newContext();
    this.ctx = ctx;

    const preludeFn = this.evaluate(PRELUDE, PRELUDE_FILE);
    if (!preludeFn) return false;
    const hostObj = this.keep(ctx.newObject());
    this.hostFunction(hostObj, "limit", (name) => {
      this.fatal ??= this.toolLimitError(ctx.getString(name));
    });
    this.hostFunction(hostObj, "log", (level, text) => this.log(ctx.getString(level), ctx.getString(text)));
    this.hostFunction(hostObj, "suggest", (name) =>
      ctx.newString(closestNames(ctx.getString(name), this.knownNames()).join(", ")),
    );
    this.hostFunction(hostObj, "done", (status, text) => {
      this.finished ??= { status: ctx.getNumber(status), text: ctx.getString(text) };
    });
    const coldSource = ctx.newString(PRELUDE_COLD);
    ctx.setProp(hostObj, "cold", coldSource);
    coldSource.dispose();
    const config = this.keep(ctx.newString(JSON.stringify(this.preludeConfig())));
    const api = this.call(preludeFn, ctx.undefined, hostObj, config);
    if (!api) return false;
    const start = this.keep(ctx.getProp(api, "start"));
    this.settleFn = this.keep(ctx.getProp(api, "settle"));
    this.collectFn = this.keep(ctx.getProp(api, "collect"));
    this.fast = new FastLane(this.engine!.module, rt, ctx);

    const compiled = ctx.evalCode(`(async function () {\n${code}\n})`, CODE_FILE, { type: "global" });
    if (compiled.error) {
      const err = this.keep(compiled.error);
      const info = this.errorInfo(err);
      if (info.name === "SyntaxError" && !this.fatal) {
        this.fatal = syntaxError(info, this.lineCount, this.numberProp(err, "lineNumber"));
      } else this.vmError(err);
      return false;
    }
    const fn = this.keep(compiled.value);
    return this.call(start, ctx.undefined, fn) !== undefined;
  }

  /**
   * Polled by QuickJS while code runs. The reason is fixed the moment it first says stop, so code that catches
   * the "interrupted" error (an async function turns it into a rejection) cannot turn a timeout into success.
   */
  private interrupt(): boolean {
    if (this.fatal) return true;
    if (this.options.signal?.aborted)
      this.fatal = { code: "SANDBOX_CANCELLED", message: "the step was cancelled" };
    else if (this.overdue()) this.fatal = this.timeoutError();
    return this.fatal !== undefined;
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

  private preludeConfig() {
    const fns = this.nsByGroup();
    const names = this.names;
    return {
      tools: this.tools.map((t) => {
        const n = names.tools.get(t.qualified)!;
        return { q: t.qualified, sid: t.server, s: n.group, n: t.name, m: n.member, g: n.global };
      }),
      ns: [...fns].map(([id, f]) => ({ id, g: names.groups.get(id)!, f })),
      maxLogChars: this.limits.max_log_bytes,
      maxResultChars: this.limits.max_result_bytes,
      maxToolCalls: this.limits.max_tool_calls,
      // A QuickJS value takes 8 bytes in a wasm32 array: no real array of this step is longer.
      maxArrayLength: Math.floor(this.limits.memory_bytes / 8),
    };
  }

  /** A host function for the prelude. Its arguments are trusted to be strings/numbers by shape only. */
  private hostFunction(
    target: QuickJSHandle,
    name: string,
    impl: (...args: QuickJSHandle[]) => QuickJSHandle | void,
  ): void {
    const ctx = this.ctx!;
    const fn = ctx.newFunction(name, (...args) => {
      try {
        return impl(...args);
      } catch (e) {
        // Never let a host exception (with its host stack) into the sandbox: end the step instead.
        if (isNativeStackOverflow(e)) this.engine!.poisoned = true;
        this.fatal ??= isNativeStackOverflow(e)
          ? { code: "SANDBOX_STACK", message: "the step's recursion went too deep" }
          : { code: "SANDBOX_RUNTIME", message: `sandbox host function ${name} failed: ${errorMessage(e)}` };
        return undefined;
      }
    });
    ctx.setProp(target, name, fn);
    fn.dispose();
  }

  private keep(handle: QuickJSHandle): QuickJSHandle {
    this.handles.push(handle);
    return handle;
  }

  private evaluate(source: string, file: string): QuickJSHandle | undefined {
    const r = this.ctx!.evalCode(source, file, { type: "global" });
    if (r.error) {
      this.vmError(this.keep(r.error));
      return undefined;
    }
    return this.keep(r.value);
  }

  /** Call a sandbox function; an exception out of it ends the step. */
  private call(
    fn: QuickJSHandle,
    thisArg: QuickJSHandle,
    ...args: QuickJSHandle[]
  ): QuickJSHandle | undefined {
    const r = this.ctx!.callFunction(fn, thisArg, ...args);
    if (r.error) {
      this.vmError(this.keep(r.error));
      return undefined;
    }
    return this.keep(r.value);
  }

  // --- the event loop -------------------------------------------------------------------------------------

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private async loop(): Promise<void> {
    for (;;) {
      this.exchange();
      if (this.fatal) return;
      if (this.fast!.jobsPending()) {
        this.runJobs();
        if (this.fatal) return;
        continue;
      }
      if (this.ready.length > 0) continue;
      if (this.pending.size === 0) {
        if (!this.finished) {
          this.fatal = {
            code: "SANDBOX_RUNTIME",
            message: "the step is waiting for a promise that nothing will settle (no tool call is in flight)",
          };
        }
        return;
      }
      if (this.options.signal?.aborted) return this.cancel();
      if (this.overdue()) return this.timeUp();
      this.idleHeldFrom = this.held();
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.heldCredit += this.held() - this.idleHeldFrom;
      this.idleHeldFrom = undefined;
      if (this.options.signal?.aborted) return this.cancel();
      if (this.overdue() && this.ready.length === 0) return this.timeUp();
    }
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

  private cancel(): void {
    if (!this.finished) this.fatal ??= { code: "SANDBOX_CANCELLED", message: "the step was cancelled" };
  }

  private timeUp(): void {
    // Code that already returned keeps its value; calls it left running are aborted (and recorded so).
    if (!this.finished) this.fatal ??= this.timeoutError();
  }

  private timeoutError(): StepError {
    return {
      code: "SANDBOX_TIMEOUT",
      message: `the step ran longer than ${this.limits.timeout_ms} ms (limit timeout_ms)`,
    };
  }

  /**
   * The calls that finished are settled inside the sandbox (their promises resolve or reject, their code runs
   * with runJobs), and the calls the code made since the last exchange are collected and started.
   */
  private exchange(): void {
    const ready = this.ready;
    this.ready = [];
    for (const r of ready) {
      const error = this.fast!.callSettle(this.settleFn!, r.id, r.ok ? 1 : 0, r.text);
      if (error) {
        this.vmError(error);
        error.dispose();
        return;
      }
    }
    const out = this.fast!.callForText(this.collectFn!);
    if (out.error) {
      this.vmError(out.error);
      out.error.dispose();
      return;
    }
    if (!out.text) return;
    for (const request of out.text.split("\x02")) {
      const [id, kind, name, json] = request.split("\x01");
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
        (kind !== "0" && kind !== "1")
      ) {
        this.fatal ??= { code: "SANDBOX_RUNTIME", message: "the sandbox sent a malformed tool call" };
        return;
      }
      if (!this.countCall(tool)) return;
      if (kind === "1") this.startNamespaceCall(Number(id), tool, json);
      else this.startToolCall(Number(id), tool, json);
    }
  }

  private runJobs(): void {
    const error = this.fast!.runJobs();
    if (error) {
      this.vmError(error);
      error.dispose();
    }
  }

  /** An exception that escaped to the host: an interrupt (ours), or an engine limit. */
  private vmError(handle: QuickJSHandle): void {
    if (this.fatal) return;
    const info = this.errorInfo(handle);
    if (info.name === "InternalError" && /interrupted/.test(info.message)) {
      this.fatal = this.options.signal?.aborted
        ? { code: "SANDBOX_CANCELLED", message: "the step was cancelled" }
        : this.timeoutError();
      return;
    }
    this.fatal = thrownError(info, this.lineCount, () => this.knownNames());
  }

  /** name/message/stack of a sandbox error value without running sandbox code (no getters, no toString). */
  private errorInfo(handle: QuickJSHandle): ThrownInfo {
    const ctx = this.ctx!;
    const str = (key: string): string | undefined => {
      try {
        const h = ctx.getProp(handle, key);
        const v = ctx.typeof(h) === "string" ? ctx.getString(h) : undefined;
        h.dispose();
        return v?.slice(0, 4000);
      } catch {
        return undefined;
      }
    };
    if (ctx.typeof(handle) !== "object") return { name: "Thrown", message: String(ctx.typeof(handle)) };
    return { name: str("name") ?? "Error", message: str("message") ?? "", stack: str("stack") };
  }

  private numberProp(handle: QuickJSHandle, key: string): number | undefined {
    try {
      const h = this.ctx!.getProp(handle, key);
      const v = this.ctx!.typeof(h) === "number" ? this.ctx!.getNumber(h) : undefined;
      h.dispose();
      return v;
    } catch {
      return undefined;
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
      promise = this.host.call(info.qualified, args, { signal: this.callsAbort.signal });
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

  private record(info: ToolInfo, started: number, ok: boolean, bytes: number, error?: ToolError): void {
    const record: ToolCallRecord = {
      server: info.server,
      tool: info.name,
      ok,
      latency_ms: performance.now() - started,
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

  private log(level: string, text: string): void {
    if (this.fatal?.code === "SANDBOX_LOG_TOO_LARGE") return;
    let line = (LEVEL_PREFIX[level] ?? "") + text;
    const left = this.limits.max_log_bytes - this.logBytes;
    const bytes = Buffer.byteLength(line);
    if (bytes > left) {
      line = Buffer.from(line)
        .subarray(0, Math.max(0, left))
        .toString()
        .replace(/\uFFFD$/, "");
      this.fatal ??= {
        code: "SANDBOX_LOG_TOO_LARGE",
        message: `the step's console output passed ${this.limits.max_log_bytes} bytes (limit max_log_bytes)`,
      };
    }
    this.logBytes += Buffer.byteLength(line);
    if (line) {
      this.logs.push(line);
      this.options.onLog?.(line);
    }
  }

  // --- the end --------------------------------------------------------------------------------------------

  private engineFailure(e: unknown): void {
    if (this.engine) this.engine.poisoned = true;
    this.fatal = isNativeStackOverflow(e)
      ? {
          code: "SANDBOX_STACK",
          message: "the step's recursion went too deep (nested data or recursive calls)",
        }
      : { code: "SANDBOX_RUNTIME", message: `the sandbox engine failed: ${errorMessage(e)}` };
  }

  private tearDown(): void {
    this.closed = true;
    // Calls still running belong to a step that is over: abort them and record them as such.
    if (this.pending.size > 0) {
      const why = this.fatal?.code ?? "the step ended";
      const reason = new Error(`the sandbox step ended (${this.fatal?.code ?? "finished"})`);
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
      this.callsAbort.abort(reason);
    }
    const engine = this.engine;
    if (!engine) return;
    this.exhausted = !engine.poisoned && heapExhausted(engine);
    if (!engine.poisoned) {
      try {
        this.fast?.dispose();
        for (const h of this.handles) if (h.alive) h.dispose();
        this.ctx?.dispose();
        this.rt?.dispose();
      } catch {
        // Freeing failed: the engine's heap is suspect, so it is not reused.
        engine.poisoned = true;
      }
    }
    // An engine whose memory grew to its cap keeps that memory: drop it rather than hold it for later steps.
    if (this.exhausted) engine.poisoned = true;
    releaseEngine(engine);
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
    this.calls.forEach(
      (c, i) => (c.started_at = new Date(performance.timeOrigin + this.callStarts[i]!).toISOString()),
    );
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
    return { ok: false, error: thrownError(info, this.lineCount, () => this.knownNames()), ...base };
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
export async function runCode(
  code: string,
  host: ToolHost,
  limits: SandboxLimits,
  options: RunOptions = {},
): Promise<ExecutionResult> {
  return new StepRun(host, limits, options).run(code);
}
