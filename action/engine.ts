/**
 * The QuickJS engines, each owned by a worker thread (worker.ts), so a step that computes never holds up this
 * thread: Ctrl-C, the deadline and the other sessions of a batch go on while it spins. The WebAssembly file is
 * read and compiled once per process and shared with every worker; each engine is one instance of it with its
 * own linear memory. Sequential steps reuse one engine; concurrent steps take one each, so a step that breaks
 * its engine (`poisoned`) cannot disturb another step's runtime. When many are busy, a step first waits a
 * moment for one to be given back (spareWaitMs): a thread costs ~10 MB, and steps are short.
 *
 * The memory limit is enforced by the WebAssembly memory, not by QuickJS: in this build QuickJS cannot measure
 * the size of its allocations (no malloc_usable_size under Emscripten), so its own limit only caps single
 * allocations. Each engine's memory is therefore created with a hard maximum of the engine's fixed base
 * (static data, C stack and the allocator's start-up heap) plus the step's `memory_bytes`; past it malloc
 * fails and the step gets QuickJS's "out of memory". A dropped engine's thread is terminated, which gives its
 * memory (which WebAssembly never shrinks) back to the system.
 */
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { createRequire } from "node:module";
import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from "node:worker_threads";
import { TOOL_ERROR_CODES, distPath, errorMessage } from "../core/index.js";
import { BELL, FLAG_WORDS, STOP, Stop, type HostMessage, type WorkerMessage } from "./protocol.js";
import { dataEnd } from "./wasm-data.js";
import type { WorkerData } from "./worker.js";

// lib "ES2023" has no WebAssembly typings; this is the call used.
declare const WebAssembly: { compile(bytes: Uint8Array): Promise<object> };

const PAGE = 64 << 10;
/** The build's initial memory (INITIAL_MEMORY): data, the C stack, and the first heap. */
export const BASE_BYTES = 16 << 20;

/** What a step hears from its engine: its messages, or that the thread died. */
export interface EngineListener {
  message(msg: WorkerMessage): void;
  failed(why: string): void;
}

export interface Engine {
  /** WebAssembly pages this engine's memory may grow to. */
  readonly maxPages: number;
  /** Never reuse it: a step broke it, or its thread was stopped. */
  poisoned: boolean;
  /** Its WebAssembly memory as last reported (it never shrinks). */
  memoryBytes: number;
  /** Post a message to the worker and wake it. */
  send(msg: HostMessage): void;
  /** Order a running step to stop (read by QuickJS's interrupt handler), and wake the worker. */
  stop(reason: typeof Stop.cancel | typeof Stop.timeout): void;
  /** The step now using the engine. */
  listen(listener: EngineListener | undefined): void;
  /** End the thread now, whatever it is doing. */
  terminate(): void;
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

/**
 * Engines busy before a step without an idle engine waits for one to be given back (up to spareWaitMs())
 * rather than start a thread at once. Each engine is a thread with its own V8 isolate and Node environment
 * (~10 MB of RSS, of which the QuickJS memory touched is ~0.3 MB; bench/sandbox-engines), and steps are short:
 * in a batch at concurrency 16 the sessions reach their steps together, and a thread per step made 10–12
 * threads. With 2 × cores busy a new thread would mostly wait for a core anyway.
 */
export const BUSY_BEFORE_WAIT = Math.max(2, 2 * availableParallelism());
/**
 * How long such a step waits; the first engine given back goes to the longest waiting step. Steps that hold
 * their engines longer (slow tool calls, code that spins) delay a waiting step by no more than this: then it
 * starts its own thread, as before. 50 ms still made 10 threads on a loaded machine (load ~20), 250 ms 6.
 * The wait's clock runs only while no engine is starting: the steps that reach their code together (a batch's
 * sessions, each after the same model latency) find the first engines still starting, and on a busy machine
 * a start (~100–150 ms of CPU) outlasted the wait, so every one of a worker's 8 sessions started a thread.
 */
export const SPARE_WAIT_MS = 250;
/**
 * Where steps hold their engines longer (a loaded machine, tools that take their time), the wait is twice the
 * usual hold, up to this: 4 queue workers at concurrency 8 on 2 cores held engines ~0.3–1 s a step, and with
 * the fixed wait each worker still started a thread per session.
 */
export const MAX_SPARE_WAIT_MS = 2_000;
/**
 * How long a step waits for engines that are still starting, at most: a thread that never finishes its start
 * must not hold every step behind it (the step then starts its own, as it would have before the wait).
 */
export const MAX_START_WAIT_MS = 15_000;

let compiled: Promise<{ wasm: object; dataEnd?: number }> | undefined;
/** Engines handed out and not yet given back. */
let busy = 0;
/** Steps waiting for an engine to be given back, oldest first; `arm` starts a waiter's clock (spareWaitMs). */
const waiting: { maxPages: number; take(engine: Engine): void; arm(): void }[] = [];
/** Engines whose thread is starting. */
let starting = 0;
/** How long steps have held their engines of late (ms, a moving average); 0 before any was given back. */
let usualHold = 0;
/** When each engine handed out was taken. */
const takenAt = new WeakMap<Engine, number>();

/** How long a step with no engine waits for one to be given back. */
export function spareWaitMs(): number {
  return Math.min(MAX_SPARE_WAIT_MS, Math.max(SPARE_WAIT_MS, 2 * usualHold));
}
/** Engines whose thread runs, for sandboxCpuMs; and the CPU of those that ended. */
const live = new Set<WorkerEngine>();
let endedCpuNs = 0;
let idle: { engine: Engine; since: number }[] = [];
let created = 0;
let trimTimer: NodeJS.Timeout | undefined;

function wasmModule(): Promise<{ wasm: object; dataEnd?: number }> {
  compiled ??= (async () => {
    const file = createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm");
    const bytes = readFileSync(file);
    return { wasm: await WebAssembly.compile(bytes), dataEnd: dataEnd(bytes) };
  })();
  return compiled;
}

class WorkerEngine implements Engine {
  poisoned = false;
  memoryBytes = BASE_BYTES;
  private listener?: EngineListener;
  private readonly flag = new Int32Array(new SharedArrayBuffer(FLAG_WORDS * 4));
  private readonly port: MessagePort;
  private readonly worker: Worker;
  private ended = false;
  /** The thread's Linux id and its CPU time when last read (ns). */
  private tid?: number;
  private cpuNs = 0;

  constructor(
    readonly maxPages: number,
    binary: { wasm: object; dataEnd?: number },
    private readonly onReady: (error?: Error) => void,
  ) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    const data: WorkerData = {
      wasm: binary.wasm,
      dataEnd: binary.dataEnd,
      initialPages: BASE_BYTES / PAGE,
      maxPages,
      flag: this.flag.buffer as SharedArrayBuffer,
      port: port2,
      toolErrorCodes: TOOL_ERROR_CODES,
    };
    // Built from dist/ as every part of pda that runs as its own file (Node cannot load the .ts sources).
    this.worker = new Worker(distPath("action/worker.js"), {
      workerData: data,
      transferList: [port2],
      // The main thread's native stack, for which MAX_STACK_BYTES is set: with the 4 MB default, native
      // recursion (JSON of deeply nested data) runs 4× deeper, and QuickJS's cycle check makes that 16× longer.
      resourceLimits: { stackSizeMb: 1 },
    });
    this.port.on("message", (msg: WorkerMessage) => this.received(msg));
    this.worker.on("error", (e) => this.died(`its thread failed: ${errorMessage(e)}`));
    this.worker.on("exit", (code) => this.died(`its thread exited (code ${code})`));
  }

  send(msg: HostMessage): void {
    this.port.postMessage(msg);
    this.ring();
  }

  stop(reason: typeof Stop.cancel | typeof Stop.timeout): void {
    Atomics.store(this.flag, STOP, reason);
    this.ring();
  }

  listen(listener: EngineListener | undefined): void {
    this.listener = listener;
    if (listener) {
      Atomics.store(this.flag, STOP, Stop.none);
      // A step under way keeps the process alive; an idle engine does not.
      this.worker.ref();
      this.port.ref();
    } else this.idle();
  }

  terminate(): void {
    this.poisoned = true;
    this.retire();
    this.ended = true;
    this.port.close();
    void this.worker.terminate();
  }

  private idle(): void {
    this.worker.unref();
    this.port.unref();
  }

  private ring(): void {
    Atomics.add(this.flag, BELL, 1);
    Atomics.notify(this.flag, BELL);
  }

  /** The thread's CPU time so far (the last reading once it is gone). */
  cpuMs(): number {
    if (this.tid !== undefined && !this.ended) {
      try {
        // The first field is the ns the thread ran (finer than /proc's stat, which counts 10 ms ticks).
        const text = readFileSync(`/proc/self/task/${this.tid}/schedstat`, "utf8");
        this.cpuNs = Number(text.slice(0, text.indexOf(" ")));
      } catch {
        // The thread has exited: keep the last reading.
      }
    }
    return this.cpuNs / 1e6;
  }

  private retire(): void {
    if (!live.delete(this)) return;
    endedCpuNs += this.cpuMs() * 1e6;
  }

  private received(msg: WorkerMessage): void {
    if (msg.t === "ready") {
      this.memoryBytes = msg.memoryBytes;
      this.tid = msg.tid;
      live.add(this);
      this.onReady();
    } else {
      // A poisoned engine's thread ends itself after `done`, which carries its CPU as it ended (read here again
      // while the thread may still be there).
      if (msg.t === "done" && msg.poisoned) {
        if (msg.cpuNs !== undefined) this.cpuNs = Math.max(this.cpuNs, msg.cpuNs);
        this.cpuMs();
      }
      this.listener?.message(msg);
    }
  }

  private died(why: string): void {
    this.poisoned = true;
    if (this.ended) return;
    // The thread's exit can be heard before its last messages (a poisoned engine's `done`, sent just before it
    // ends itself): those are read first, or a step that ended well would be failed as a dead engine.
    for (let m = receiveMessageOnPort(this.port); m; m = receiveMessageOnPort(this.port)) {
      this.received(m.message as WorkerMessage);
    }
    this.retire();
    this.ended = true;
    this.onReady(new Error(why));
    this.listener?.failed(why);
    this.port.close();
  }
}

/** An engine for one step whose heap may hold `memoryBytes`; give it back with `releaseEngine`. */
export async function acquireEngine(memoryBytes: number): Promise<Engine> {
  const maxPages = Math.ceil((BASE_BYTES + memoryBytes) / PAGE);
  // The most recently used first: the least grown of equals is not known, and recent ones are warm.
  for (let i = idle.length - 1; i >= 0; i--) {
    if (idle[i]!.engine.maxPages === maxPages) return taken(idle.splice(i, 1)[0]!.engine);
  }
  if (busy >= BUSY_BEFORE_WAIT) {
    const given = await giveBack(maxPages);
    if (given) return taken(given);
  }
  busy++;
  try {
    const engine = await startEngine(maxPages);
    takenAt.set(engine, Date.now());
    return engine;
  } catch (e) {
    busy--;
    throw e;
  }
}

function taken(engine: Engine): Engine {
  busy++;
  takenAt.set(engine, Date.now());
  return engine;
}

/**
 * The next engine of `maxPages` given back within spareWaitMs() of no engine starting, or undefined (then the
 * step starts its own).
 */
function giveBack(maxPages: number): Promise<Engine | undefined> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    let armed = false;
    const giveUp = () => {
      waiting.splice(waiting.indexOf(waiter), 1);
      resolve(undefined);
    };
    const waiter = {
      maxPages,
      take: (engine: Engine) => {
        clearTimeout(timer);
        resolve(engine);
      },
      arm: () => {
        if (armed) return;
        armed = true;
        clearTimeout(timer);
        timer = setTimeout(giveUp, spareWaitMs());
      },
    };
    waiting.push(waiter);
    if (starting === 0) waiter.arm();
    else timer = setTimeout(giveUp, MAX_START_WAIT_MS);
  });
}

async function startEngine(maxPages: number): Promise<Engine> {
  starting++;
  try {
    const wasm = await wasmModule();
    created++;
    let engine!: Engine;
    await new Promise<void>((resolve, reject) => {
      let settled = false;
      engine = new WorkerEngine(maxPages, wasm, (error) => {
        if (settled) return;
        settled = true;
        if (error) reject(error);
        else resolve();
      });
    });
    return engine;
  } finally {
    if (--starting === 0) for (const w of waiting) w.arm();
  }
}

function grown(engine: Engine): number {
  return Math.max(0, engine.memoryBytes - BASE_BYTES);
}

function drop(engine: Engine): void {
  engine.terminate();
}

export function releaseEngine(engine: Engine, now = Date.now()): void {
  busy--;
  const since = takenAt.get(engine);
  if (since !== undefined) {
    const held = Math.max(0, Date.now() - since);
    usualHold = usualHold === 0 ? held : 0.8 * usualHold + 0.2 * held;
  }
  engine.listen(undefined);
  if (engine.poisoned) {
    engine.terminate();
    return;
  }
  const w = waiting.findIndex((x) => x.maxPages === engine.maxPages);
  if (w >= 0) {
    waiting.splice(w, 1)[0]!.take(engine);
    return;
  }
  // Most recently used last; the oldest go when the pool is over its count or its bytes.
  idle.push({ engine, since: now });
  while (idle.length > MAX_IDLE) drop(idle.shift()!.engine);
  let extra = idle.reduce((sum, e) => sum + grown(e.engine), 0);
  for (let i = 0; i < idle.length - 1 && extra > MAX_IDLE_GROWN_BYTES;) {
    const g = grown(idle[i]!.engine);
    if (g > 0) {
      drop(idle.splice(i, 1)[0]!.engine);
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
  const old = idle.filter((e) => e.since < before);
  idle = idle.filter((e) => e.since >= before);
  for (const e of old) drop(e.engine);
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
  return { count: idle.length, bytes: idle.reduce((sum, e) => sum + e.engine.memoryBytes, 0) };
}

/**
 * CPU milliseconds the engines' threads have used in this process (QuickJS running steps, their set-up and
 * teardown), from /proc on Linux (0 elsewhere). A batch's CPU per query less this is what pda spends beyond
 * the sandbox. A thread that ends itself after a step broke its engine reports its CPU as it ends.
 */
export function sandboxCpuMs(): number {
  let ns = endedCpuNs;
  for (const engine of live) ns += engine.cpuMs() * 1e6;
  return ns / 1e6;
}

/** How many engine instances this process has created (the bench and tests check reuse). */
export function enginesCreated(): number {
  return created;
}
