/**
 * An engine's one QuickJS runtime and context, made once per engine: the prelude compiled (the largest part of
 * a fresh context's cost: QuickJS parsing ~15 KB of JavaScript), its host functions bound, then the memory
 * captured (image.ts). Each step calls the compiled prelude with its own config, runs, and afterwards the
 * memory is written back, so every step starts from the same bytes, as if the context were fresh.
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

export class WarmContext {
  readonly rt: QuickJSRuntime;
  readonly ctx: QuickJSContext;
  /** The prelude's function `(host, configText) => api`, compiled. */
  readonly prelude: QuickJSHandle;
  /** The object of host functions handed to the prelude. */
  readonly host: QuickJSHandle;
  /** The step now running; none while warming or between steps. */
  step?: StepSide;
  private readonly image: MemoryImage;

  constructor(module: QuickJSWASMModule, layout: ImageLayout) {
    const rt = module.newRuntime();
    this.rt = rt;
    rt.setInterruptHandler(() => this.step?.interrupt() ?? false);
    const ctx = rt.newContext();
    this.ctx = ctx;
    const compiled = ctx.evalCode(PRELUDE, PRELUDE_FILE, { type: "global" });
    if (compiled.error) {
      const what = ctx.dump(compiled.error) as unknown;
      throw new Error(`the sandbox prelude does not compile: ${JSON.stringify(what)}`);
    }
    this.prelude = compiled.value;
    const host = ctx.newObject();
    this.host = host;
    this.bind("limit", (name) => this.step?.limit(ctx.getString(name)));
    this.bind("log", (level, text) => this.step?.log(ctx.getString(level), ctx.getString(text)));
    this.bind("suggest", (name) => ctx.newString(this.step?.suggest(ctx.getString(name)) ?? ""));
    this.bind("done", (status, text) => this.step?.done(ctx.getNumber(status), ctx.getString(text)));
    // Most steps never need it: ~10 KB not copied into every step's context.
    this.bind("cold", () => ctx.newString(PRELUDE_COLD));
    this.image = new MemoryImage(module.getWasmMemory(), rt, layout);
  }

  private bind(name: string, impl: (...args: QuickJSHandle[]) => QuickJSHandle | void): void {
    const fn = this.ctx.newFunction(name, (...args) => {
      try {
        return impl(...args);
      } catch (e) {
        this.step?.hostFailed(name, e);
        return undefined;
      }
    });
    this.ctx.setProp(this.host, name, fn);
    fn.dispose();
  }

  /** Bytes written back per reset, and where the image ends (for the bench and tests). */
  get imageBytes(): number {
    return this.image.bytes;
  }

  get imageEnd(): number {
    return this.image.end;
  }

  /** False when the engine's state cannot be put back (its C stack is not at its base): never reuse it. */
  canReset(): boolean {
    return this.image.canReset();
  }

  /** Put the memory back as it was once warmed. Only between steps, and only when canReset(). */
  reset(): void {
    this.step = undefined;
    this.image.reset();
  }
}
