/**
 * The QuickJS half of one CODE step, run inside its engine's worker thread (worker.ts): the engine's warm context
 * set to the step's tools and config (warm.ts; its memory is written back after the step), the code, and a
 * synchronous loop that runs jobs, hands the calls the code made to the host, and blocks until the host settles
 * some or ends the step. Every limit QuickJS enforces is decided here;
 * the host's own (max_tool_calls at the host, cancel, the deadline while idle) arrive as END or STOP.
 */
import { receiveMessageOnPort, type MessagePort } from "node:worker_threads";
import type { QuickJSContext, QuickJSHandle, QuickJSWASMModule } from "quickjs-emscripten-core";
import type { StepError, ToolErrorCode } from "../core/index.js";
import { CODE_FILE, closestNames, syntaxError, thrownError, type ThrownInfo } from "./errors.js";
import { FastLane } from "./fast.js";
import {
  BELL,
  STOP,
  Stop,
  type DoneMessage,
  type Finished,
  type HostMessage,
  type SettleMessage,
  type StartMessage,
} from "./protocol.js";
import type { StepSide, WarmContext } from "./warm.js";

/**
 * QuickJS's recursion limit, whatever `stack_bytes` asks for. The interpreter runs on the thread's native
 * stack; past about 300 KB of QuickJS stack, JavaScript recursion through native helpers (Array.map, getters,
 * sort) overflows a 1 MB native stack before QuickJS notices. 256 KB still allows ~1,100 plain recursive calls.
 */
export const MAX_STACK_BYTES = 256 << 10;

const PAGE = 64 << 10;
const LEVEL_PREFIX: Record<string, string> = { warn: "[warn] ", error: "[error] ", debug: "[debug] " };

/** One engine: a QuickJS module instance with its own capped linear memory (engine.ts). */
export interface VmEngine {
  readonly module: QuickJSWASMModule;
  readonly maxPages: number;
  /** Its one runtime and context, warmed once and reset after each step (warm.ts). */
  readonly warm: WarmContext;
  /** Set when a native (V8) stack overflow unwound through the engine mid-operation: never reuse it. */
  poisoned: boolean;
  /** core's isToolErrorCode, from the list the host sent (the thread does not load core/). */
  isToolCode(code: unknown): code is ToolErrorCode;
}

/** A thrown value's message. Not core's errorMessage: loading core/ would double the thread's start time. */
function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** V8's own stack overflow, thrown through the WebAssembly frames. */
export function isNativeStackOverflow(e: unknown): boolean {
  return e instanceof RangeError && /call stack size/i.test(e.message);
}

/**
 * True when the engine's memory has grown to (nearly) its cap: the step exhausted its heap. QuickJS may then
 * have thrown `null` instead of an error object (it could not allocate one), so this names the failure, and
 * the engine is dropped to give the memory back.
 */
function heapExhausted(engine: VmEngine): boolean {
  const cap = engine.maxPages * PAGE;
  const size = engine.module.getWasmMemory().buffer.byteLength;
  return size + Math.max(1 << 20, cap / 20) >= cap;
}

/** Blocks until the host posts a message; undefined when it set STOP instead (and `stoppable`). */
export function waitForHost(
  port: MessagePort,
  flag: Int32Array,
  stoppable: boolean,
): HostMessage | undefined {
  for (;;) {
    // Read the bell before looking: a message posted after the look rings it, and the wait returns at once.
    const rung = Atomics.load(flag, BELL);
    const m = receiveMessageOnPort(port);
    if (m) return m.message as HostMessage;
    if (stoppable && Atomics.load(flag, STOP) !== Stop.none) return undefined;
    Atomics.wait(flag, BELL, rung);
  }
}

/** How many of the collected calls wait on the host: tool and namespace calls (kinds 0, 1). */
function awaited(calls: string): number {
  let n = 0;
  for (const request of calls.split("\x02")) {
    const kind = request.split("\x01", 2)[1];
    // Not the calls answered from the log (2, 3), nor clock readings (4).
    if (kind === "0" || kind === "1") n++;
  }
  return n;
}

export class StepVm implements StepSide {
  private fatal?: StepError;
  private finished?: Finished;
  private finishedSent = false;
  private logBytes = 0;
  private lineCount = 1;
  private dueAt: number;
  /** Calls handed to the host and not yet settled. */
  private outstanding = 0;
  /** The last calls collected when none is awaited: answered here from the log, for the host to log. */
  private answered?: string;
  private ctx?: QuickJSContext;
  private settleFn?: QuickJSHandle;
  private collectFn?: QuickJSHandle;
  private fast?: FastLane;

  constructor(
    private readonly engine: VmEngine,
    private readonly port: MessagePort,
    private readonly flag: Int32Array,
    private readonly start: StartMessage,
  ) {
    this.dueAt = start.dueAt;
  }

  run(): DoneMessage {
    let exhausted = false;
    try {
      this.lineCount = this.start.code.split("\n").length;
      if (this.setUp(this.start.code)) this.loop();
    } catch (e) {
      this.engineFailure(e);
    } finally {
      exhausted = this.tearDown();
    }
    return {
      t: "done",
      fatal: this.fatal,
      finished: this.finished,
      ...(this.answered && { calls: this.answered }),
      exhausted,
      poisoned: this.engine.poisoned,
      memoryBytes: this.engine.module.getWasmMemory().buffer.byteLength,
    };
  }

  // --- set-up ---------------------------------------------------------------------------------------------

  /** The warm context's prelude configured for this step, the code compiled and started. False when it ended. */
  private setUp(code: string): boolean {
    const { limits } = this.start;
    const warm = this.engine.warm;
    warm.step = this;
    const { rt, ctx } = warm;
    this.ctx = ctx;
    rt.setMemoryLimit(limits.memory_bytes);
    rt.setMaxStackSize(Math.min(limits.stack_bytes, MAX_STACK_BYTES));
    const bindError = warm.prepare(this.start.tools);
    warm.dirty();
    if (bindError) {
      this.vmError(bindError);
      return false;
    }
    this.fast = new FastLane(this.engine.module, rt, ctx);
    const begun = this.fast.callWithText(warm.begin, this.start.config);
    if ("error" in begun) {
      // The config is JSON the host wrote, but for the logged results a replayed step splices in as the log
      // holds them (sandbox.ts replayJson): a text that is not JSON there is a damaged log, not the code's error.
      const info = this.errorInfo(begun.error);
      if (info.name === "SyntaxError" && !this.fatal) {
        this.fatal = {
          code: "SANDBOX_RUNTIME",
          message: `the step's logged results cannot be read (is the session's log damaged?): ${info.message}`,
        };
      } else this.vmError(begun.error);
      return false;
    }
    const api = begun.value;
    const start = ctx.getProp(api, "start");
    this.settleFn = ctx.getProp(api, "settle");
    this.collectFn = ctx.getProp(api, "collect");

    const compiled = ctx.evalCode(`(async function () {\n${code}\n})`, CODE_FILE, { type: "global" });
    if (compiled.error) {
      const err = compiled.error;
      const info = this.errorInfo(err);
      if (info.name === "SyntaxError" && !this.fatal) {
        this.fatal = syntaxError(info, this.lineCount, this.numberProp(err, "lineNumber"));
      } else this.vmError(err);
      return false;
    }
    const fn = compiled.value;
    return this.call(start, ctx.undefined, fn) !== undefined;
  }

  /**
   * Polled by QuickJS while code runs. The reason is fixed the moment it first says stop, so code that catches
   * the "interrupted" error (an async function turns it into a rejection) cannot turn a timeout into success.
   * The STOP word is the host's (Ctrl-C, its own view of the deadline); the clock is checked here too, so a
   * spinning step times out without waiting for the host's thread.
   */
  interrupt(): boolean {
    if (this.fatal) return true;
    const stop = Atomics.load(this.flag, STOP);
    if (stop === Stop.cancel) this.fatal = { code: "SANDBOX_CANCELLED", message: "the step was cancelled" };
    else if (stop === Stop.timeout || Date.now() > this.dueAt) this.fatal = this.timeoutError();
    return this.fatal !== undefined;
  }

  // --- the prelude's host functions (warm.ts binds them once per engine) ---------------------------------

  limit(name: string): void {
    this.fatal ??= {
      code: "SANDBOX_TOOL_LIMIT",
      message: `the step tried to make more than ${this.start.limits.max_tool_calls} tool calls (limit max_tool_calls)`,
      tool: name,
    };
  }

  suggest(name: string): string {
    return closestNames(name, this.start.names).join(", ");
  }

  done(status: number, text: string): void {
    this.finished ??= { status, text };
  }

  hostFailed(name: string, e: unknown): void {
    if (isNativeStackOverflow(e)) this.engine.poisoned = true;
    this.fatal ??= isNativeStackOverflow(e)
      ? { code: "SANDBOX_STACK", message: "the step's recursion went too deep" }
      : { code: "SANDBOX_RUNTIME", message: `sandbox host function ${name} failed: ${errorMessage(e)}` };
  }

  /** Call a sandbox function; an exception out of it ends the step. */
  private call(
    fn: QuickJSHandle,
    thisArg: QuickJSHandle,
    ...args: QuickJSHandle[]
  ): QuickJSHandle | undefined {
    const r = this.ctx!.callFunction(fn, thisArg, ...args);
    if (r.error) {
      this.vmError(r.error);
      return undefined;
    }
    return r.value;
  }

  // --- the loop -------------------------------------------------------------------------------------------

  private loop(): void {
    for (;;) {
      if (this.fatal) return;
      if (this.fast!.jobsPending()) {
        this.runJobs();
        continue;
      }
      const calls = this.collect();
      if (calls === undefined) return;
      if (calls) this.outstanding += awaited(calls);
      if (this.outstanding === 0) {
        if (calls) this.answered = calls;
        if (!this.finished) {
          this.fatal = {
            code: "SANDBOX_RUNTIME",
            message: "the step is waiting for a promise that nothing will settle (no tool call is in flight)",
          };
        }
        return;
      }
      const finished = this.finishedSent ? undefined : this.finished;
      if (finished) this.finishedSent = true;
      this.port.postMessage({ t: "idle", calls, ...(finished && { finished }) });
      const msg = waitForHost(this.port, this.flag, true);
      if (!msg) {
        // STOP while waiting: as the host would end an idle step, code that already returned keeps its value.
        if (!this.finished) {
          this.fatal ??=
            Atomics.load(this.flag, STOP) === Stop.cancel
              ? { code: "SANDBOX_CANCELLED", message: "the step was cancelled" }
              : this.timeoutError();
        }
        return;
      }
      if (msg.t !== "settle") return;
      this.settle(msg);
    }
  }

  private collect(): string | undefined {
    const out = this.fast!.callForText(this.collectFn!);
    if (out.error) {
      this.vmError(out.error);
      out.error.dispose();
      return undefined;
    }
    return out.text;
  }

  private settle(msg: SettleMessage): void {
    this.dueAt = msg.dueAt;
    for (let i = 0; i < msg.ids.length; i++) {
      this.outstanding--;
      const error = this.fast!.callSettle(this.settleFn!, msg.ids[i]!, msg.oks[i]!, msg.texts[i]!);
      if (error) {
        this.vmError(error);
        error.dispose();
        return;
      }
    }
  }

  private runJobs(): void {
    const error = this.fast!.runJobs();
    if (error) {
      this.vmError(error);
      error.dispose();
    }
  }

  private timeoutError(): StepError {
    return {
      code: "SANDBOX_TIMEOUT",
      message: `the step ran longer than ${this.start.limits.timeout_ms} ms (limit timeout_ms)`,
    };
  }

  /** An exception that escaped to the host: an interrupt (ours), or an engine limit. */
  private vmError(handle: QuickJSHandle): void {
    if (this.fatal) return;
    const info = this.errorInfo(handle);
    if (info.name === "InternalError" && /interrupted/.test(info.message)) {
      this.fatal =
        Atomics.load(this.flag, STOP) === Stop.cancel
          ? { code: "SANDBOX_CANCELLED", message: "the step was cancelled" }
          : this.timeoutError();
      return;
    }
    this.fatal = thrownError(info, this.lineCount, () => this.start.names, this.engine.isToolCode);
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

  /** One console line, cut to what is left of max_log_bytes, sent to the host as it is written. */
  log(level: string, text: string): void {
    if (this.fatal?.code === "SANDBOX_LOG_TOO_LARGE") return;
    const max = this.start.limits.max_log_bytes;
    let line = (LEVEL_PREFIX[level] ?? "") + text;
    const left = max - this.logBytes;
    const bytes = Buffer.byteLength(line);
    if (bytes > left) {
      line = Buffer.from(line)
        .subarray(0, Math.max(0, left))
        .toString()
        .replace(/\uFFFD$/, "");
      this.fatal ??= {
        code: "SANDBOX_LOG_TOO_LARGE",
        message: `the step's console output passed ${max} bytes (limit max_log_bytes)`,
      };
    }
    this.logBytes += Buffer.byteLength(line);
    if (line) this.port.postMessage({ t: "log", line });
  }

  // --- the end --------------------------------------------------------------------------------------------

  private engineFailure(e: unknown): void {
    this.engine.poisoned = true;
    this.fatal = isNativeStackOverflow(e)
      ? {
          code: "SANDBOX_STACK",
          message: "the step's recursion went too deep (nested data or recursive calls)",
        }
      : { code: "SANDBOX_RUNTIME", message: `the sandbox engine failed: ${errorMessage(e)}` };
  }

  /**
   * Leaves the engine to be reset (warm.ts: its memory written back, so nothing here is freed one by one); true
   * when the step used up its heap (the engine is then not reused).
   */
  private tearDown(): boolean {
    const engine = this.engine;
    const exhausted = !engine.poisoned && heapExhausted(engine);
    engine.warm.step = undefined;
    // A call that unwound abnormally leaves the C stack off its base: the memory cannot be put back.
    if (!engine.poisoned && !engine.warm.canReset()) engine.poisoned = true;
    // An engine whose memory grew to its cap keeps that memory: drop it rather than hold it for later steps.
    if (exhausted) engine.poisoned = true;
    return exhausted;
  }
}
