/**
 * An engine's one QuickJS runtime and context, made once per engine: the prelude compiled (QuickJS parsing
 * ~15 KB of JavaScript) and run up to what depends on the step (prelude.ts), its cold part compiled, its host
 * functions bound; then the memory captured (image.ts). A tool set is bound once per engine too (binding costs
 * ~50 µs a tool in QuickJS): the first step with that set binds it over the base image and captures the result.
 * Each step starts from its tool set's image, calls the prelude's `begin` with its own config, runs, and
 * afterwards the image is written back, so every step starts from the same bytes, as if the context were
 * fresh, without paying for it.
 *
 * The host functions and the interrupt handler are bound once and answer for the step now running (`step`).
 */
import type {
  QuickJSContext,
  QuickJSHandle,
  QuickJSRuntime,
  QuickJSWASMModule,
} from "quickjs-emscripten-core";
import { MemoryImage, type ImageLayout } from "./image.js";
import { PRELUDE, PRELUDE_COLD, PRELUDE_FILE } from "./prelude.js";

/** What the step now running answers for the prelude's host functions (prelude.ts lists them). */
export interface StepSide {
  interrupt(): boolean;
  limit(name: string): void;
  log(level: string, text: string): void;
  suggest(name: string): string;
  done(status: number, text: string): void;
  /** A host function threw: end the step (never let a host exception into the sandbox). */
  hostFailed(name: string, error: unknown): void;
}

/**
 * Tool sets whose image an engine keeps (~0.6 MB each). A session or a batch uses one set for all its steps; a
 * team's agents each see their own.
 */
export const MAX_TOOL_IMAGES = 3;

export class WarmContext {
  readonly rt: QuickJSRuntime;
  readonly ctx: QuickJSContext;
  /** The prelude's `begin(configText) => api`, for each step (prelude.ts). */
  readonly begin: QuickJSHandle;
  /** The step now running; none while warming or between steps. */
  step?: StepSide;
  private readonly bindTools: QuickJSHandle;
  private readonly memory: { readonly buffer: ArrayBuffer };
  private readonly layout: ImageLayout;
  /** No tools bound. */
  private readonly base: MemoryImage;
  /** By the tools' JSON, least recently used first. */
  private readonly images = new Map<string, MemoryImage>();
  /** The image the memory holds now, unchanged; undefined while a step runs or after it. */
  private clean?: MemoryImage;
  /** The image the last step started from: the one put back after it. */
  private last: MemoryImage;
  /** Whether a step has run: until then the memory above the base image is still all zero. */
  private used = false;

  constructor(module: QuickJSWASMModule, layout: ImageLayout) {
    const rt = module.newRuntime();
    this.rt = rt;
    rt.setInterruptHandler(() => this.step?.interrupt() ?? false);
    const ctx = rt.newContext();
    this.ctx = ctx;
    const host = ctx.newObject();
    this.bind(host, "limit", (name) => this.step?.limit(ctx.getString(name)));
    this.bind(host, "log", (level, text) => this.step?.log(ctx.getString(level), ctx.getString(text)));
    this.bind(host, "suggest", (name) => ctx.newString(this.step?.suggest(ctx.getString(name)) ?? ""));
    this.bind(host, "done", (status, text) => this.step?.done(ctx.getNumber(status), ctx.getString(text)));
    this.bind(host, "cold", () => ctx.newString(PRELUDE_COLD));
    const compiled = ctx.evalCode(PRELUDE, PRELUDE_FILE, { type: "global" });
    const doors = compiled.error ? compiled : ctx.callFunction(compiled.value, ctx.undefined, host);
    if (doors.error) {
      const what = ctx.dump(doors.error) as unknown;
      throw new Error(`the sandbox prelude failed: ${JSON.stringify(what)}`);
    }
    this.bindTools = ctx.getProp(doors.value, "bind");
    this.begin = ctx.getProp(doors.value, "begin");
    doors.value.dispose();
    if (!compiled.error) compiled.value.dispose();
    host.dispose();
    this.memory = module.getWasmMemory();
    this.layout = layout;
    this.base = new MemoryImage(this.memory, rt, layout);
    this.clean = this.last = this.base;
  }

  private bind(
    host: QuickJSHandle,
    name: string,
    impl: (...args: QuickJSHandle[]) => QuickJSHandle | void,
  ): void {
    const fn = this.ctx.newFunction(name, (...args) => {
      try {
        return impl(...args);
      } catch (e) {
        this.step?.hostFailed(name, e);
        return undefined;
      }
    });
    this.ctx.setProp(host, name, fn);
    fn.dispose();
  }

  /**
   * Make the memory hold `tools` bound (their JSON: prelude.ts's bind) and nothing else: their image if the
   * engine has it, else the base image with them bound, captured for next time. The error `bind` threw, if any
   * (a handle; the memory then holds the base image again).
   */
  prepare(tools: string): QuickJSHandle | undefined {
    const image = this.images.get(tools);
    if (image) {
      this.images.delete(tools);
      this.images.set(tools, image);
      this.use(image);
      return undefined;
    }
    this.use(this.base);
    // The image is taken of the memory's used part: what earlier steps left above the base must not be in it.
    if (this.used) new Uint8Array(this.memory.buffer).fill(0, this.base.end);
    const text = this.ctx.newString(tools);
    const bound = this.ctx.callFunction(this.bindTools, this.ctx.undefined, text);
    text.dispose();
    if (bound.error) {
      const error = bound.error;
      this.last = this.base;
      return error;
    }
    bound.value.dispose();
    const made = new MemoryImage(this.memory, this.rt, this.layout);
    this.images.set(tools, made);
    if (this.images.size > MAX_TOOL_IMAGES) this.images.delete(this.images.keys().next().value!);
    this.clean = this.last = made;
    return undefined;
  }

  private use(image: MemoryImage): void {
    if (this.clean !== image) image.reset();
    this.clean = this.last = image;
  }

  /** A step is about to change the memory. */
  dirty(): void {
    this.clean = undefined;
    this.used = true;
  }

  /** Bytes written back per reset, and where the image ends (for the bench and tests). */
  get imageBytes(): number {
    return this.last.bytes;
  }

  get imageEnd(): number {
    return this.last.end;
  }

  /** False when the engine's state cannot be put back (its C stack is not at its base): never reuse it. */
  canReset(): boolean {
    return this.last.canReset();
  }

  /** Put back the image the last step started from. Only between steps, and only when canReset(). */
  reset(): void {
    this.step = undefined;
    this.last.reset();
    this.clean = this.last;
  }
}
