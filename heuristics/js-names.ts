/** Name lists the code guard checks against. */

const words = (s: string): readonly string[] => s.trim().split(/\s+/);

/** ECMAScript globals the QuickJS sandbox has (no Intl, no timers, no host APIs). */
export const JS_BUILTINS = words(`
  Object Array Number Boolean String Symbol BigInt Math JSON Date RegExp Promise Proxy Reflect
  Map Set WeakMap WeakSet WeakRef FinalizationRegistry
  Error AggregateError EvalError RangeError ReferenceError SyntaxError TypeError URIError
  ArrayBuffer SharedArrayBuffer Atomics DataView Int8Array Uint8Array Uint8ClampedArray Int16Array Uint16Array
  Int32Array Uint32Array Float32Array Float64Array BigInt64Array BigUint64Array
  parseInt parseFloat isNaN isFinite encodeURI encodeURIComponent decodeURI decodeURIComponent escape unescape
  NaN Infinity undefined arguments
`);

/** What the sandbox adds beside the tools (DESIGN.md, "CODE steps"). */
export const SANDBOX_HELPERS = words("parallel callTool console memory agents ToolError");

const ADVICE: ReadonlyArray<[string, string]> = [
  [
    "process require module exports __dirname __filename Buffer",
    "Node.js APIs do not exist in the sandbox; use the tools for any input or output.",
  ],
  ["eval Function", "generating code at run time is not allowed; write the code directly."],
  [
    "globalThis global window self",
    "the global object is not reachable; call tools and helpers by their names.",
  ],
  [
    "fetch XMLHttpRequest WebSocket EventSource navigator",
    "code has no network access; call a tool that fetches instead.",
  ],
  [
    "setTimeout setInterval setImmediate clearTimeout clearInterval queueMicrotask requestAnimationFrame",
    "there are no timers; use await, and parallel([...]) to run calls at the same time.",
  ],
  [
    "Deno Bun Worker importScripts WebAssembly Intl structuredClone",
    "this host API does not exist in the sandbox.",
  ],
];

/** Globals the generated code must not touch, with the advice the model gets for each. */
export const FORBIDDEN_GLOBALS: Readonly<Record<string, string>> = Object.fromEntries(
  ADVICE.flatMap(([names, advice]) => words(names).map((n) => [n, advice])),
);
