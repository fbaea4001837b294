/**
 * One QuickJS engine's WebAssembly instance: the module compiled once per process (engine.ts) instantiated on a
 * memory of its own. It is instantiated here rather than by quickjs-emscripten's variant, to keep its exports:
 * emscripten's stackSave (export "Oa" of the pinned build, checked) tells the memory image where the dead C
 * stack is (image.ts).
 */
import releaseSyncModule from "@jitl/quickjs-wasmfile-release-sync";
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";

// The package's types describe its CommonJS build; under ESM its default export is the variant itself.
const releaseSync = releaseSyncModule as unknown as QuickJSSyncVariant;

// lib "ES2023" has no WebAssembly typings; this is the call used.
declare const WebAssembly: {
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
};

export interface EngineInstance {
  module: QuickJSWASMModule;
  /** The C stack pointer now; undefined when this build does not export stackSave where expected. */
  stackPointer?: () => number;
}

export async function instantiate(
  wasm: object,
  memory: { readonly buffer: ArrayBuffer },
): Promise<EngineInstance> {
  let exported: Record<string, unknown> = {};
  const variant = newVariant(releaseSync, {
    wasmMemory: memory as never,
    emscriptenModule: {
      instantiateWasm(imports: object, done: (instance: object, module: object) => void) {
        const instance = new WebAssembly.Instance(wasm, imports);
        exported = instance.exports;
        done(instance, wasm);
        return instance.exports;
      },
    } as never,
  });
  const module = await newQuickJSWASMModuleFromVariant(variant);
  return { module, stackPointer: stackSave(exported.Oa, memory) };
}

/** `fn` if it behaves as stackSave: no arguments, the same 16-aligned address inside the memory each time. */
function stackSave(fn: unknown, memory: { readonly buffer: ArrayBuffer }): (() => number) | undefined {
  if (typeof fn !== "function" || fn.length !== 0) return undefined;
  const read = fn as () => unknown;
  const sp = read();
  const ok =
    typeof sp === "number" && sp > 0 && sp % 16 === 0 && sp < memory.buffer.byteLength && read() === sp;
  return ok ? (read as () => number) : undefined;
}
