/**
 * The QuickJS engines: the WebAssembly file is read and compiled once per process; each engine is one
 * instance of it with its own linear memory. Sequential steps reuse one engine; concurrent steps take one
 * each, so a step that breaks its engine (`poisoned`) cannot disturb another step's runtime.
 *
 * The memory limit is enforced here, not by QuickJS: in this build QuickJS cannot measure the size of its
 * allocations (no malloc_usable_size under Emscripten), so its own limit only caps single allocations. Each
 * engine's WebAssembly memory is therefore created with a hard maximum of the engine's fixed base (static
 * data, C stack and the allocator's start-up heap) plus the step's `memory_bytes`; past it malloc fails and
 * the step gets QuickJS's "out of memory".
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import releaseSyncModule from "@jitl/quickjs-wasmfile-release-sync";
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";

// The package's types describe its CommonJS build; under ESM its default export is the variant itself.
const releaseSync = releaseSyncModule as unknown as QuickJSSyncVariant;

// lib "ES2023" has no WebAssembly typings; these are the calls used.
declare const WebAssembly: {
  compile(bytes: Uint8Array): Promise<WasmModule>;
  Memory: new (descriptor: { initial: number; maximum: number }) => { buffer: ArrayBuffer };
};
type WasmModule = object;

const PAGE = 64 << 10;
/** The build's initial memory (INITIAL_MEMORY): data, the C stack, and the first heap. */
export const BASE_BYTES = 16 << 20;

export interface Engine {
  readonly module: QuickJSWASMModule;
  /** WebAssembly pages this engine's memory may grow to. */
  readonly maxPages: number;
  /** Set when a native (V8) stack overflow unwound through the engine mid-operation: never reuse it. */
  poisoned: boolean;
}

/**
 * Idle engines kept for reuse; more than this after a burst of concurrent steps are dropped. A batch at
 * concurrency 16 with only 2 kept made and dropped ~50 engines a run, and their GC pauses cost 1.7× the ideal
 * wall time (1.1× with 16). A single session never holds more than one, so this costs nothing there.
 */
const MAX_IDLE = 16;
/**
 * WebAssembly memory never shrinks: an engine keeps whatever its heaviest step grew it to. The idle pool holds
 * at most this many bytes of such growth past the base (16 engines that each ran a heavy step kept ~820 MB),
 * dropping the oldest grown engines first; engines at their base size are bounded by MAX_IDLE and IDLE_MS.
 */
export const MAX_IDLE_GROWN_BYTES = 96 << 20;
/** An engine idle this long is dropped, so a process that stopped running steps gives the memory back. */
export const IDLE_MS = 30_000;

let compiled: Promise<WasmModule> | undefined;
let idle: { engine: Engine; since: number }[] = [];
let created = 0;
let trimTimer: NodeJS.Timeout | undefined;

function wasmModule(): Promise<WasmModule> {
  compiled ??= (async () => {
    const file = createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm");
    return WebAssembly.compile(readFileSync(file));
  })();
  return compiled;
}

/** An engine for one step whose heap may hold `memoryBytes`; give it back with `releaseEngine`. */
export async function acquireEngine(memoryBytes: number): Promise<Engine> {
  const maxPages = Math.ceil((BASE_BYTES + memoryBytes) / PAGE);
  // The most recently used first: the least grown of equals is not known, and recent ones are warm.
  for (let i = idle.length - 1; i >= 0; i--)
    if (idle[i]!.engine.maxPages === maxPages) return idle.splice(i, 1)[0]!.engine;
  const memory = new WebAssembly.Memory({ initial: BASE_BYTES / PAGE, maximum: maxPages });
  const variant = newVariant(releaseSync, {
    wasmModule: (await wasmModule()) as never,
    wasmMemory: memory as never,
  });
  created++;
  return { module: await newQuickJSWASMModuleFromVariant(variant), maxPages, poisoned: false };
}

/**
 * True when the engine's memory has grown to (nearly) its cap: the step exhausted its heap. QuickJS may then
 * have thrown `null` instead of an error object (it could not allocate one), so callers use this to name
 * the failure, and drop the engine to give the memory back.
 */
export function heapExhausted(engine: Engine): boolean {
  const cap = engine.maxPages * PAGE;
  const size = engine.module.getWasmMemory().buffer.byteLength;
  return size + Math.max(1 << 20, cap / 20) >= cap;
}

function memoryBytes(engine: Engine): number {
  return engine.module.getWasmMemory().buffer.byteLength;
}

function grown(engine: Engine): number {
  return Math.max(0, memoryBytes(engine) - BASE_BYTES);
}

export function releaseEngine(engine: Engine, now = Date.now()): void {
  if (engine.poisoned) return;
  // Most recently used last; the oldest go when the pool is over its count or its bytes.
  idle = [...idle, { engine, since: now }].slice(-MAX_IDLE);
  let extra = idle.reduce((sum, e) => sum + grown(e.engine), 0);
  for (let i = 0; i < idle.length - 1 && extra > MAX_IDLE_GROWN_BYTES;) {
    const g = grown(idle[i]!.engine);
    if (g > 0) {
      idle.splice(i, 1);
      extra -= g;
    } else i++;
  }
  trimTimer ??= setTimeout(() => {
    trimTimer = undefined;
    trimIdle(Date.now() - IDLE_MS);
  }, IDLE_MS).unref();
}

/** Drop the idle engines released before `before` (ms since the epoch); re-arms itself while any are left. */
export function trimIdle(before: number): void {
  idle = idle.filter((e) => e.since >= before);
  if (idle.length > 0 && !trimTimer) {
    const next = Math.max(0, idle[0]!.since + IDLE_MS - Date.now());
    trimTimer = setTimeout(() => {
      trimTimer = undefined;
      trimIdle(Date.now() - IDLE_MS);
    }, next).unref();
  }
}

/** The idle pool: how many engines and the bytes of WebAssembly memory they hold. */
export function idleEngines(): { count: number; bytes: number } {
  return { count: idle.length, bytes: idle.reduce((sum, e) => sum + memoryBytes(e.engine), 0) };
}

/** How many engine instances this process has created (the bench and tests check reuse). */
export function enginesCreated(): number {
  return created;
}
