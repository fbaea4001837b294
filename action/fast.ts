/**
 * The per-tool-call hot path, straight through the QuickJS FFI. quickjs-emscripten's handle API costs
 * ~5 µs per call into the VM (Lifetime objects, pointer arrays, result wrappers); a tool call needs three such
 * crossings, which alone would make sandbox code several times slower than host code against a fast MCP
 * server. Here each crossing is a few raw FFI calls on pointers, with one reusable UTF-8 buffer.
 *
 * It reads fields the library marks private (the emscripten module, runtime and context pointers); the
 * constructor checks they exist, so an incompatible quickjs-emscripten fails loudly at the first step.
 */
import type {
  QuickJSContext,
  QuickJSHandle,
  QuickJSRuntime,
  QuickJSWASMModule,
} from "quickjs-emscripten-core";

interface Emscripten {
  _malloc(bytes: number): number;
  _free(ptr: number): void;
  HEAPU8: Uint8Array;
}

interface Ffi {
  QTS_Call(ctx: number, fn: number, thisArg: number, argc: number, argv: number): number;
  QTS_ResolveException(ctx: number, value: number): number;
  QTS_NewString(ctx: number, chars: number): number;
  QTS_NewFloat64(ctx: number, num: number): number;
  QTS_GetString(ctx: number, value: number): number;
  QTS_FreeCString(ctx: number, chars: number): void;
  QTS_FreeValuePointer(ctx: number, value: number): void;
  QTS_FreeValuePointerRuntime(rt: number, value: number): void;
  QTS_ExecutePendingJob(rt: number, max: number, lastContext: number): number;
  QTS_IsJobPending(rt: number): number;
  QTS_Typeof(ctx: number, value: number): number;
  QTS_GetUndefined(): number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class FastLane {
  private readonly ffi: Ffi;
  private readonly em: Emscripten;
  private readonly rt: number;
  private readonly ctx: number;
  private readonly undef: number;
  /** argv (up to three pointers) and the out-parameter of ExecutePendingJob. */
  private readonly scratch: number;
  private buf = 0;
  private cap = 0;
  /** A view on the scratch words; made again when the heap grows (growing detaches the old buffer). */
  private words?: Uint32Array;

  constructor(
    module: QuickJSWASMModule,
    runtime: QuickJSRuntime,
    private readonly context: QuickJSContext,
  ) {
    const em = (module as unknown as { module?: Emscripten }).module;
    const rt = (runtime as unknown as { rt?: { value?: number } }).rt?.value;
    const ctx = (context as unknown as { ctx?: { value?: number } }).ctx?.value;
    if (!em || typeof em._malloc !== "function" || typeof rt !== "number" || typeof ctx !== "number") {
      throw new Error(
        "quickjs-emscripten internals changed: the sandbox's fast path cannot find its pointers",
      );
    }
    this.ffi = module.getFFI() as unknown as Ffi;
    this.em = em;
    this.rt = rt;
    this.ctx = ctx;
    this.undef = this.ffi.QTS_GetUndefined();
    this.scratch = this.malloc(16);
  }

  private malloc(bytes: number): number {
    const ptr = this.em._malloc(bytes);
    // The heap is capped (engine.ts): a failed allocation is the step running out of memory.
    if (!ptr) throw new RangeError("out of memory");
    return ptr;
  }

  /** A QuickJS string for `text` (owned JSValue pointer). */
  private newString(text: string): number {
    const need = text.length * 3 + 1;
    if (need > this.cap) {
      if (this.buf) this.em._free(this.buf);
      this.cap = Math.max(need, 2 * this.cap, 256);
      this.buf = 0;
      this.buf = this.malloc(this.cap);
    }
    const heap = this.em.HEAPU8;
    const { written } = encoder.encodeInto(text, heap.subarray(this.buf, this.buf + this.cap - 1));
    heap[this.buf + written] = 0;
    return this.ffi.QTS_NewString(this.ctx, this.buf);
  }

  private readString(value: number): string {
    const chars = this.ffi.QTS_GetString(this.ctx, value);
    if (!chars) return "";
    const heap = this.em.HEAPU8;
    const end = heap.indexOf(0, chars);
    const text = decoder.decode(heap.subarray(chars, end < 0 ? heap.length : end));
    this.ffi.QTS_FreeCString(this.ctx, chars);
    return text;
  }

  /** The scratch words: [0..2] argv, [3] ExecutePendingJob's context out-parameter. */
  private scratchWords(): Uint32Array {
    const buffer = this.em.HEAPU8.buffer;
    if (this.words?.buffer !== buffer) this.words = new Uint32Array(buffer, this.scratch, 4);
    return this.words;
  }

  private handle(ptr: number): QuickJSHandle {
    return this.context.getMemory(this.rt as never).heapValueHandle(ptr as never);
  }

  /** `fn(...argv)` with owned value pointers (freed here) → the result pointer, or the exception it threw. */
  private call(fn: QuickJSHandle, argv: number[]): { result: number } | { error: QuickJSHandle } {
    const words = this.scratchWords();
    for (let i = 0; i < argv.length; i++) words[i] = argv[i]!;
    const result = this.ffi.QTS_Call(
      this.ctx,
      fn.value as unknown as number,
      this.undef,
      argv.length,
      this.scratch,
    );
    for (const arg of argv) this.ffi.QTS_FreeValuePointer(this.ctx, arg);
    const error = this.ffi.QTS_ResolveException(this.ctx, result);
    if (!error) return { result };
    this.ffi.QTS_FreeValuePointer(this.ctx, result);
    return { error: this.handle(error) };
  }

  /**
   * `fn(text)` → its result (a handle the caller owns), or the exception it threw. For a step's config: with a
   * replay log it runs to kilobytes, which the library's own string conversion copies a character at a time.
   */
  callWithText(fn: QuickJSHandle, text: string): { value: QuickJSHandle } | { error: QuickJSHandle } {
    const out = this.call(fn, [this.newString(text)]);
    return "error" in out ? out : { value: this.handle(out.result) };
  }

  /** `fn(id, ok, text)`, its result ignored; the exception it threw, if any (a handle the caller disposes). */
  callSettle(fn: QuickJSHandle, id: number, ok: number, text: string): QuickJSHandle | undefined {
    // All values are made before call() takes its view of the heap: making one may grow it.
    const str = this.newString(text);
    const out = this.call(fn, [
      this.ffi.QTS_NewFloat64(this.ctx, id),
      this.ffi.QTS_NewFloat64(this.ctx, ok),
      str,
    ]);
    if ("error" in out) return out.error;
    this.ffi.QTS_FreeValuePointer(this.ctx, out.result);
    return undefined;
  }

  /** `fn()` → its result as a string, or the exception it threw (a handle the caller disposes). */
  callForText(fn: QuickJSHandle): { text: string; error?: undefined } | { error: QuickJSHandle } {
    const out = this.call(fn, []);
    if ("error" in out) return out;
    const text = this.readString(out.result);
    this.ffi.QTS_FreeValuePointer(this.ctx, out.result);
    return { text };
  }

  jobsPending(): boolean {
    return this.ffi.QTS_IsJobPending(this.rt) !== 0;
  }

  /** Run every pending job; the exception that stopped them, if any (a handle the caller disposes). */
  runJobs(): QuickJSHandle | undefined {
    this.scratchWords()[3] = 0;
    const value = this.ffi.QTS_ExecutePendingJob(this.rt, -1, this.scratch + 12);
    // Read through a fresh lookup: the jobs may have grown the heap.
    const jobContext = this.scratchWords()[3]!;
    if (jobContext === 0) {
      this.ffi.QTS_FreeValuePointerRuntime(this.rt, value);
      return undefined;
    }
    // Success is the number of jobs run; failure is the exception value itself.
    const type = this.ffi.QTS_Typeof(jobContext, value);
    const isNumber = this.em.HEAPU8[type] === 0x6e; // "number"
    this.em._free(type);
    if (isNumber) {
      this.ffi.QTS_FreeValuePointerRuntime(this.rt, value);
      return undefined;
    }
    return this.handle(value);
  }

  dispose(): void {
    if (this.buf) this.em._free(this.buf);
    this.em._free(this.scratch);
    this.buf = 0;
  }
}
