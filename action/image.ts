/**
 * An engine's memory image: its WebAssembly memory as it was once the engine was warmed (warm.ts: runtime,
 * context, prelude compiled, host functions bound), written back after every step. QuickJS keeps all of its
 * state in that memory (the C heap, its allocator's bookkeeping, static data), so writing the bytes back puts
 * the engine exactly where it was before the step: nothing a step did (globals, patched built-ins, objects,
 * pending jobs) survives into the next one, and no step pays to parse the prelude again. Host-side state that
 * refers into the memory is put back too: the runtime's table of host functions (a step can free one).
 *
 * What is not copied, because it is dead between calls into the engine:
 * - the C stack below the stack pointer (the stack grows down, and the pointer is back at its base whenever no
 *   call into the engine is under way; `reset` checks that it is, else the engine is not reused). Of the
 *   build's 5 MB stack only what lies below the data's end plus STACK_MARGIN is copied;
 * - the memory above the image's highest non-zero byte, where the step's heap may have grown. The allocator
 *   treats that as fresh memory from sbrk and initialises what it hands out (calloc clears, QuickJS zeroes what
 *   it must), as it already does for memory a previous step freed; the tests run steps over poisoned bytes.
 */

const PAGE = 64 << 10;
/**
 * Bytes past the end of the module's initialised data that are always copied: zero-initialised static data
 * (bss) lies there, before the stack, and is not in the binary's data segments. This build's is ~3 KB.
 */
export const STACK_MARGIN = 256 << 10;

/** quickjs-emscripten's table of host functions (its private HostRefMap), as far as the image uses it. */
interface HostRefs {
  nextId: number;
  freelist: number[];
  groups: Map<number, Map<number, unknown>>;
}

export interface ImageLayout {
  /** The C stack pointer now (emscripten's stackSave); undefined when the build does not export it. */
  stackPointer?: () => number;
  /** Where the module's initialised data ends (wasm-data.ts); undefined when unknown. */
  dataEnd?: number;
}

function hostRefsOf(runtime: object): HostRefs {
  const refs = (runtime as { hostRefs?: Partial<HostRefs> }).hostRefs;
  if (
    !refs ||
    typeof refs.nextId !== "number" ||
    !Array.isArray(refs.freelist) ||
    !(refs.groups instanceof Map)
  ) {
    throw new Error(
      "quickjs-emscripten internals changed: the sandbox cannot find the runtime's host functions",
    );
  }
  return refs as HostRefs;
}

function copyRefs(refs: HostRefs): HostRefs {
  return {
    nextId: refs.nextId,
    freelist: [...refs.freelist],
    groups: new Map([...refs.groups].map(([id, group]) => [id, new Map(group)])),
  };
}

/** One past the highest non-zero byte of `bytes` (0 when all are zero). */
export function usedEnd(bytes: Uint8Array): number {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const zero = Buffer.alloc(PAGE);
  for (let page = Math.floor((view.length - 1) / PAGE) * PAGE; page >= 0; page -= PAGE) {
    const end = Math.min(page + PAGE, view.length);
    if (view.compare(zero, 0, end - page, page, end) === 0) continue;
    let last = end;
    while (view[last - 1] === 0) last--;
    return last;
  }
  return 0;
}

export class MemoryImage {
  /** [0, low.length) and [highStart, highStart + high.length) of the memory, as captured. */
  private readonly low: Uint8Array;
  private readonly high: Uint8Array;
  private readonly highStart: number;
  private readonly stackPointer?: () => number;
  private readonly pointerAtCapture?: number;
  private readonly refs: HostRefs;
  private readonly savedRefs: HostRefs;

  /** Capture the memory now; `runtime` is the engine's one QuickJSRuntime. */
  constructor(
    private readonly memory: { readonly buffer: ArrayBuffer },
    runtime: object,
    layout: ImageLayout,
  ) {
    this.refs = hostRefsOf(runtime);
    this.savedRefs = copyRefs(this.refs);
    const bytes = new Uint8Array(memory.buffer);
    const top = usedEnd(bytes);
    const sp = layout.stackPointer?.();
    const lowEnd = layout.dataEnd === undefined ? undefined : layout.dataEnd + STACK_MARGIN;
    if (sp !== undefined && lowEnd !== undefined && sp - lowEnd >= PAGE && sp <= top) {
      this.stackPointer = layout.stackPointer;
      this.pointerAtCapture = sp;
      this.low = bytes.slice(0, lowEnd);
      this.high = bytes.slice(sp, top);
      this.highStart = sp;
    } else {
      // Layout unknown: the whole used memory, stack included.
      this.low = bytes.slice(0, top);
      this.high = new Uint8Array(0);
      this.highStart = top;
    }
  }

  /** One past the highest byte the image holds: above it is free memory (and, after a step, its garbage). */
  get end(): number {
    return this.high.length > 0 ? this.highStart + this.high.length : this.low.length;
  }

  /** Bytes written back per reset. */
  get bytes(): number {
    return this.low.length + this.high.length;
  }

  /** False when the stack pointer is not back at its base (a call unwound abnormally): do not reset or reuse. */
  canReset(): boolean {
    return this.stackPointer === undefined || this.stackPointer() === this.pointerAtCapture;
  }

  /** Write the image back. Only between calls into the engine, and only when canReset(). */
  reset(): void {
    const bytes = new Uint8Array(this.memory.buffer);
    bytes.set(this.low, 0);
    bytes.set(this.high, this.highStart);
    const saved = copyRefs(this.savedRefs);
    this.refs.nextId = saved.nextId;
    this.refs.freelist = saved.freelist;
    this.refs.groups = saved.groups;
  }
}
