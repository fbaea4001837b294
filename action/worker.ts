/**
 * The worker thread that owns one QuickJS engine (engine.ts starts it). It makes the engine from the
 * WebAssembly module the host compiled once and warms it (warm.ts), says `ready`, then runs steps one after
 * another, synchronously and blocking between messages (protocol.ts), writing the engine's memory image back
 * after each, until the host says `exit` or terminates it. A step that poisons the engine ends the thread after
 * its `done`.
 */
import { readFileSync, readlinkSync } from "node:fs";
import { workerData, type MessagePort } from "node:worker_threads";
import type { ToolErrorCode } from "../core/index.js";
import { StepVm, waitForHost, type VmEngine } from "./vm.js";
import { instantiate } from "./instance.js";
import { WarmContext } from "./warm.js";

// lib "ES2023" has no WebAssembly typings; this is the call used.
declare const WebAssembly: {
  Memory: new (descriptor: { initial: number; maximum: number }) => { buffer: ArrayBuffer };
};

export interface WorkerData {
  /** The compiled WebAssembly.Module (shared, not recompiled per thread). */
  wasm: object;
  /** Where its initialised data ends (wasm-data.ts), for the memory image; undefined when unknown. */
  dataEnd?: number;
  initialPages: number;
  maxPages: number;
  flag: SharedArrayBuffer;
  port: MessagePort;
  /** core's TOOL_ERROR_CODES: a ToolError the step's code throws keeps its code only if it is one of them. */
  toolErrorCodes: readonly string[];
}

const data = workerData as WorkerData;
const flag = new Int32Array(data.flag);
const port = data.port;
const toolCodes = new Set(data.toolErrorCodes);

const memory = new WebAssembly.Memory({ initial: data.initialPages, maximum: data.maxPages });
const { module, stackPointer } = await instantiate(data.wasm, memory);
const engine: VmEngine = {
  module,
  warm: new WarmContext(module, { stackPointer, dataEnd: data.dataEnd }),
  maxPages: data.maxPages,
  poisoned: false,
  isToolCode: (code): code is ToolErrorCode => typeof code === "string" && toolCodes.has(code),
};
port.postMessage({ t: "ready", memoryBytes: memory.buffer.byteLength, tid: threadId() });

/** This thread's Linux id ("<pid>/task/<tid>"), so the host can read its CPU time; none off Linux. */
function threadId(): number | undefined {
  try {
    return Number(readlinkSync("/proc/thread-self").split("/").at(-1));
  } catch {
    return undefined;
  }
}

/** This thread's CPU time in ns (the first field of its schedstat, as the host reads it); none off Linux. */
function ownCpuNs(): number | undefined {
  try {
    const text = readFileSync("/proc/thread-self/schedstat", "utf8");
    return Number(text.slice(0, text.indexOf(" ")));
  } catch {
    return undefined;
  }
}

for (;;) {
  const msg = waitForHost(port, flag, false)!;
  if (msg.t === "exit") break;
  if (msg.t !== "start") continue; // a late message of a step that is over
  const done = new StepVm(engine, port, flag, msg).run();
  // This thread ends itself below: its CPU is read here, as the host may find it gone.
  if (done.poisoned) done.cpuNs = ownCpuNs();
  port.postMessage(done);
  if (engine.poisoned) break;
  // After `done` is on its way: the host reads the result while the memory is written back.
  engine.warm.reset();
}
port.close();
