import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { MessageChannel } from "node:worker_threads";
import { beforeAll, describe, expect, it } from "vitest";
import { SandboxLimits } from "../../config/index.js";
import { TOOL_ERROR_CODES } from "../../core/index.js";
import { BASE_BYTES } from "../engine.js";
import { MemoryImage, STACK_MARGIN, usedEnd } from "../image.js";
import { instantiate } from "../instance.js";
import { FLAG_WORDS, type DoneMessage, type StartMessage } from "../protocol.js";
import { StepVm, type VmEngine } from "../vm.js";
import { WarmContext } from "../warm.js";
import { dataEnd } from "../wasm-data.js";

declare const WebAssembly: {
  compile(bytes: Uint8Array): Promise<object>;
  Memory: new (d: { initial: number; maximum: number }) => { buffer: ArrayBuffer };
};

const PAGE = 64 << 10;
const limits = SandboxLimits.parse({ timeout_ms: 60_000, memory_bytes: 64 << 20 });
let binary: Uint8Array;
let wasm: object;

/** An engine as a worker thread makes it (worker.ts), in this thread: steps here make no tool calls. */
async function engine(): Promise<VmEngine & { memory: { buffer: ArrayBuffer } }> {
  const maxPages = (BASE_BYTES + limits.memory_bytes) / PAGE;
  const memory = new WebAssembly.Memory({ initial: BASE_BYTES / PAGE, maximum: maxPages });
  const { module, stackPointer } = await instantiate(wasm, memory);
  const codes = new Set<string>(TOOL_ERROR_CODES);
  return {
    module,
    memory,
    warm: new WarmContext(module, { stackPointer, dataEnd: dataEnd(binary) }),
    maxPages,
    poisoned: false,
    isToolCode: (c): c is never => typeof c === "string" && codes.has(c),
  };
}

function step(
  e: VmEngine,
  code: string,
  tools: { q: string; s: string; n: string; g?: string }[] = [],
): DoneMessage {
  const { port1 } = new MessageChannel();
  const flag = new Int32Array(new SharedArrayBuffer(FLAG_WORDS * 4));
  const toolsJson = JSON.stringify({
    tools: tools.map((t) => ({ q: t.q, sid: t.s, s: t.s, n: t.n, m: t.n, g: t.g })),
    ns: [],
  });
  const config = JSON.stringify({
    maxLogChars: limits.max_log_bytes,
    maxResultChars: limits.max_result_bytes,
    maxToolCalls: limits.max_tool_calls,
    maxArrayLength: limits.memory_bytes / 8,
    seed: 7,
    clock: [],
  });
  const start: StartMessage = {
    t: "start",
    code,
    limits,
    tools: toolsJson,
    config,
    names: [],
    dueAt: Date.now() + 60_000,
  };
  const done = new StepVm(e, port1, flag, start).run();
  port1.close();
  return done;
}

// What a step that runs after another one sees: anything the first left behind would show here.
const LOOK = `return JSON.stringify([
  typeof leak, ({}).polluted, [1, 2].map((x) => x * 2), Math.random(), Date.now() >= 1_700_000_000_000,
  JSON.stringify(Array.from({ length: 3000 }, (_, i) => ({ i, s: String(i).repeat(40) }))).length,
  new Uint8Array(1 << 20).every((b) => b === 0), new Float64Array(4096).every((b) => b === 0),
  "abc".padEnd(100000, "xyz").length, [...new Map([[1, 2]])], new Set([3, 3, 4]).size,
]);`;
const DIRTY = `globalThis.leak = 42; Object.prototype.polluted = 1; Array.prototype.map = () => "patched";
Math.random = () => 0.5; const keep = []; for (let i = 0; i < 20000; i++) keep.push({ s: "x".repeat(100) + i });
globalThis.keep = keep; new Promise(() => {}); return keep.length;`;

beforeAll(async () => {
  binary = readFileSync(createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm"));
  wasm = await WebAssembly.compile(binary);
});

describe("the engine's memory image", () => {
  it("knows the pinned build's layout: the 5 MB C stack is left out of what each reset copies", async () => {
    const e = await engine();
    expect(e.warm.imageBytes).toBeLessThan(1 << 20);
    expect(e.warm.imageEnd).toBeGreaterThan(5 << 20); // the heap starts above the stack
  });

  it("a step on a reset engine sees nothing of the step before, over free memory full of garbage", async () => {
    const fresh = await engine();
    const expected = step(fresh, LOOK);
    expect(expected.fatal).toBeUndefined();
    expect(expected.finished?.status).toBe(1);

    const e = await engine();
    for (let round = 0; round < 3; round++) {
      const dirty = step(e, DIRTY);
      expect(dirty.finished?.status, JSON.stringify(dirty.fatal)).toBe(1);
      expect(e.poisoned).toBe(false);
      e.warm.reset();
      // What the step's heap left above the image, and more: the allocator must not rely on zeroed memory.
      new Uint8Array(e.memory.buffer).fill(0xa5, e.warm.imageEnd);
      expect(step(e, LOOK)).toEqual(expected);
      e.warm.reset();
    }
  });

  it("each tool set is bound once and each step sees only its own set's tools", async () => {
    const e = await engine();
    const mathSet = [{ q: "math.add", s: "math", n: "add", g: "add" }];
    const textSet = [{ q: "text.echo", s: "text", n: "echo", g: "echo" }];
    const look = `return [typeof add, typeof echo, typeof math, typeof text, String(globalThis.mark)];`;
    for (let round = 0; round < 3; round++) {
      for (const [set, want] of [
        [mathSet, '["function","undefined","object","undefined","undefined"]'],
        [textSet, '["undefined","function","undefined","object","undefined"]'],
        [[], '["undefined","undefined","undefined","undefined","undefined"]'],
      ] as const) {
        const d = step(e, `globalThis.mark = 1; ${look}`, [...set]);
        expect(d.fatal).toBeUndefined();
        expect(JSON.parse(d.finished!.text)).toEqual(JSON.parse(want.replace(/"undefined"\]$/, '"1"]')));
        e.warm.reset();
        expect(JSON.parse(step(e, look, [...set]).finished!.text)).toEqual(JSON.parse(want));
        e.warm.reset();
      }
    }
  });

  it("a host function freed by a step is back after the reset", async () => {
    const e = await engine();
    // The prelude holds its host functions in a closure; a step cannot reach them, but a reset must not depend
    // on that: drop the runtime's table as a freed function would, then reset.
    const refs = (e.warm.rt as unknown as { hostRefs: { groups: Map<number, unknown> } }).hostRefs;
    refs.groups = new Map();
    e.warm.reset();
    const done = step(e, `console.log("still here"); return 1;`);
    expect(done.fatal).toBeUndefined();
    expect(done.finished?.status).toBe(1);
  });

  it("puts back data and heap, leaves the stack below its pointer, and refuses when the pointer moved", () => {
    const memory = new WebAssembly.Memory({ initial: 64, maximum: 64 }); // 4 MB
    const bytes = new Uint8Array(memory.buffer);
    const data = 1000;
    let sp = 2 << 20;
    bytes.fill(1, 0, data); // initialised data
    bytes.fill(2, sp - 4096, sp); // live stack frames just below the pointer: dead between calls
    bytes.fill(3, sp, sp + 100_000); // heap
    const runtime = { hostRefs: { nextId: 5, freelist: [], groups: new Map([[0, new Map([[1, "f"]])]]) } };
    const image = new MemoryImage(memory, runtime, { stackPointer: () => sp, dataEnd: data });
    expect(image.end).toBe(sp + 100_000);
    expect(image.bytes).toBe(data + STACK_MARGIN + 100_000);

    bytes.fill(9, 0, 3 << 20);
    runtime.hostRefs.groups = new Map();
    runtime.hostRefs.nextId = 9;
    expect(image.canReset()).toBe(true);
    image.reset();
    expect(bytes.subarray(0, data).every((b) => b === 1)).toBe(true);
    expect(bytes.subarray(data, data + STACK_MARGIN).every((b) => b === 0)).toBe(true);
    expect(bytes.subarray(data + STACK_MARGIN, sp).every((b) => b === 9)).toBe(true); // the dead stack
    expect(bytes.subarray(sp, sp + 100_000).every((b) => b === 3)).toBe(true);
    expect(runtime.hostRefs.nextId).toBe(5);
    expect(runtime.hostRefs.groups.get(0)?.get(1)).toBe("f");

    sp -= 16;
    expect(image.canReset()).toBe(false);
  });

  it("without the stack's place it copies all the used memory", () => {
    const memory = new WebAssembly.Memory({ initial: 64, maximum: 64 });
    new Uint8Array(memory.buffer).fill(4, 3 << 20, (3 << 20) + 10);
    const image = new MemoryImage(memory, { hostRefs: { nextId: 0, freelist: [], groups: new Map() } }, {});
    expect(image.bytes).toBe((3 << 20) + 10);
    expect(image.canReset()).toBe(true);
  });

  it("usedEnd finds the highest non-zero byte", () => {
    const b = new Uint8Array(300_000);
    expect(usedEnd(b)).toBe(0);
    b[5] = 1;
    expect(usedEnd(b)).toBe(6);
    b[200_001] = 7;
    expect(usedEnd(b)).toBe(200_002);
  });
});
