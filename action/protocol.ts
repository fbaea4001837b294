/**
 * The messages between a step's host side (sandbox.ts, main thread) and its engine's worker thread (worker.ts,
 * vm.ts). Both ends are this package's own code, so the shapes are types, not schemas.
 *
 * The worker runs synchronously: it never returns to its event loop during a step. It blocks in Atomics.wait
 * on the BELL word of a shared Int32Array and reads its messages with receiveMessageOnPort, so a message costs
 * a futex wake, not an event-loop turn. The host rings the bell after each message it posts. The STOP word is
 * the host's order to end the step at once; QuickJS's interrupt handler reads it with Atomics.load, so it
 * reaches code that spins without ever yielding.
 */
import type { SandboxLimits } from "../config/index.js";
import type { StepError } from "../core/index.js";

/** Indexes of the shared Int32Array. */
export const STOP = 0;
export const BELL = 1;
export const FLAG_WORDS = 2;

/** Values of the STOP word. */
export const Stop = { none: 0, cancel: 1, timeout: 2 } as const;

export interface Finished {
  /** 1: the step returned (tagged JSON); 0: it threw (error JSON); 2: its value was too large (text = size). */
  status: number;
  text: string;
}

// --- host → worker ------------------------------------------------------------------------------------------

export interface StartMessage {
  t: "start";
  code: string;
  limits: SandboxLimits;
  /** The tools and namespaces the prelude binds (prelude.ts's bind), as JSON: the same text for the same set. */
  tools: string;
  /** The prelude's per-step config (prelude.ts's begin), as JSON. */
  config: string;
  /** Every name the code may call, for "did you mean" in errors. */
  names: string[];
  /** Date.now() past which the code is overdue (moves on with each settle; see sandbox.ts's dueAt). */
  dueAt: number;
}

export interface SettleMessage {
  t: "settle";
  /** Calls finished since the last settle, in parallel arrays: id, 1 ok / 0 failed, payload. */
  ids: number[];
  oks: number[];
  texts: string[];
  dueAt: number;
}

/** The host ended the step while the worker waited (a limit it enforces, a cancel, a timeout). */
export interface EndMessage {
  t: "end";
}

export type HostMessage = StartMessage | SettleMessage | EndMessage | { t: "exit" };

// --- worker → host ------------------------------------------------------------------------------------------

export interface LogMessage {
  t: "log";
  /** One console line, already cut to the step's log budget. */
  line: string;
}

/** The worker ran out of work: the calls it collected (prelude.ts's outbox format), then it waits. */
export interface IdleMessage {
  t: "idle";
  calls: string;
  /** Sent once, with the first idle after the code returned or threw. */
  finished?: Finished;
}

export interface DoneMessage {
  t: "done";
  fatal?: StepError;
  finished?: Finished;
  /** Calls the prelude answered from the log after the last idle: the host still checks and logs them. */
  calls?: string;
  /** The engine's heap grew to its cap (see heapExhausted). */
  exhausted: boolean;
  /** The engine must not run another step. */
  poisoned: boolean;
  /** Its WebAssembly memory now (it never shrinks). */
  memoryBytes: number;
  /**
   * When poisoned: the thread's CPU time (ns) as it ends itself, read by the thread, since the host may hear
   * this message only after the thread is gone from /proc.
   */
  cpuNs?: number;
}

/** The engine is made. `tid`: the thread's Linux id, for its CPU time in /proc (engine.ts's sandboxCpuMs). */
export interface ReadyMessage {
  t: "ready";
  memoryBytes: number;
  tid?: number;
}

export type WorkerMessage = ReadyMessage | LogMessage | IdleMessage | DoneMessage;
