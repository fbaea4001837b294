/**
 * Escape attempts: public proof-of-concept escapes of vm2, isolated-vm, node:vm and QuickJS embeddings,
 * adapted to this sandbox. Each payload tries to reach the host and, if it got anything, to do damage a test
 * can see: write a file, change a host global, pollute a host prototype. After every payload the host is
 * checked: no file, canary unchanged, prototypes and globals as they were, and it still answers.
 */
import { existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SandboxLimits } from "../../config/index.js";
import type { ExecutionResult } from "../../core/index.js";
import { Opaque } from "../codec.js";
import { runCode, type Namespaces } from "../index.js";
import { limits, testHost } from "./helpers.js";

const CANARY_FILE = join(tmpdir(), `pda-escape-${process.pid}-${Date.now()}`);
const host = testHost();
const namespaceArgs: unknown[][] = [];
const namespaces: Namespaces = {
  probe: {
    take: async (args) => {
      namespaceArgs.push(args);
      return "taken";
    },
  },
};

/** Prepended to every payload: what an escaped payload would do with whatever it reached. */
const DAMAGE = `const PATH = ${JSON.stringify(CANARY_FILE)};
function damage(g) {
  if (g === null || (typeof g !== "object" && typeof g !== "function")) return false;
  let hit = false;
  try { g.process.mainModule.require("fs").writeFileSync(PATH, "x"); hit = true } catch {}
  try { g.require("fs").writeFileSync(PATH, "x"); hit = true } catch {}
  try { g.process.binding("fs"); hit = true } catch {}
  try { if ("__pdaCanary" in g) { g.__pdaCanary = "owned"; hit = true } } catch {}
  try { if (typeof g.process === "object") hit = true } catch {}
  return hit;
}
`;

type Check = (r: ExecutionResult) => void;
interface Payload {
  name: string;
  code: string;
  limits?: Partial<SandboxLimits>;
  check: Check;
}

const returns =
  (expected: unknown): Check =>
  (r) => {
    expect(r.error).toBeUndefined();
    expect(r.value).toEqual(expected);
  };
const failsWith =
  (code: string): Check =>
  (r) => {
    expect(r.ok).toBe(false);
    expect(r.error?.code).toBe(code);
  };
const QUICK = { timeout_ms: 300 };

const PAYLOADS: Payload[] = [
  {
    name: "node:vm: this.constructor.constructor('return this')()",
    code: "const g = this.constructor.constructor('return this')();\nreturn [damage(g), g === globalThis, typeof g.process]",
    check: returns([false, true, "undefined"]),
  },
  {
    name: "node:vm: Function constructor reached through an injected tool function",
    code: "const g = add.constructor('return globalThis')();\nconst h = add.constructor.constructor('return this')();\nreturn [damage(g), damage(h), g === globalThis, h === globalThis]",
    check: returns([false, false, true, true]),
  },
  {
    name: "node:vm: constructor chain of console.log, parallel and ToolError",
    code: "return [console.log, parallel, ToolError, callTool].map(f => { const g = f.constructor.constructor('return this')(); return damage(g) || g !== globalThis })",
    check: returns([false, false, false, false]),
  },
  {
    name: "node:vm: constructor chain of a value and of a ToolError that came from the host",
    code: "const v = await echo('x');\nlet e; try { await divide(1, 0) } catch (x) { e = x }\nconst gs = [v.constructor.constructor('return this')(), e.constructor.constructor('return this')(), Object.getPrototypeOf(e).constructor.constructor.constructor('return this')()];\nreturn [gs.map(damage), gs.every(g => g === globalThis), Object.getPrototypeOf(Object.getPrototypeOf(e)) === Error.prototype]",
    check: returns([[false, false, false], true, true]),
  },
  {
    name: "prototype walk from every injected function ends at this context's own intrinsics",
    code: "const injected = [add, math.add, console.log, console.error, parallel, callTool, ToolError, text['get-weather']];\nconst allowed = new Set([...injected, Error, Function.prototype, Object.prototype]);\nconst strange = [];\nfor (const f of injected) { let p = f; while (p !== null) { if (!allowed.has(p)) strange.push(String(p)); p = Object.getPrototypeOf(p) } }\nreturn strange",
    check: returns([]),
  },
  {
    name: "host function .caller / .arguments (vm2-style caller walk)",
    code: "const out = [add, console.log, parallel, ToolError, callTool, math.add].map(f => { try { return [typeof f.caller, typeof f.arguments] } catch (e) { return e.name } });\nconst fromCallback = await add(1, 2).then(function cb() { try { return [typeof cb.caller, typeof arguments.callee.caller] } catch (e) { return e.name } });\nreturn [out, fromCallback]",
    check: (r) => {
      expect(r.error).toBeUndefined();
      // Either the access throws (TypeError) or there is nothing there; never a function or object.
      const flat = JSON.stringify(r.value);
      expect(flat).not.toContain('"function"');
      expect(flat).not.toContain('"object"');
    },
  },
  {
    name: "vm2 CVE-2022-36067: Error.prepareStackTrace to get at call-site this/function",
    code: "const got = [];\nError.prepareStackTrace = (e, frames) => { for (const f of frames) { try { got.push(f.getThis(), f.getFunction()) } catch {} } return 'x' };\ntry { await divide(1, 0) } catch (e) { e.stack }\nnew Error('y').stack;\nawait add(1, 2).then(() => { new Error('z').stack });\nreturn [got.some(damage), typeof Error.captureStackTrace]",
    check: returns([false, "undefined"]),
  },
  {
    name: "vm2 CVE-2023-29017: async stack frames through prepareStackTrace",
    code: "Error.prepareStackTrace = (e, s) => { damage(s && s[0] && s[0].getThis && s[0].getThis()); return 'patched' };\nasync function f() { await add(1, 2); throw new Error('boom') }\nconst stack = await f().catch(e => e.stack);\nreturn [typeof stack, /\\/work|file:|node_modules|node:/.test(stack)]",
    check: returns(["string", false]),
  },
  {
    name: "vm2 CVE-2023-30547: a Proxy thrown out of the step so the host handles it",
    code: "let busy = false;\nconst probe = (args) => { if (busy) return; busy = true; try { for (const a of args) damage(a) } finally { busy = false } };\nthrow new Proxy(new Error('x'), { get(t, k, r) { probe([t, r]); return Reflect.get(t, k) }, getPrototypeOf(t) { probe([t]); return Reflect.getPrototypeOf(t) }, getOwnPropertyDescriptor(t, k) { probe([t]); return Reflect.getOwnPropertyDescriptor(t, k) } })",
    check: failsWith("SANDBOX_RUNTIME"),
  },
  {
    name: "vm2 CVE-2023-32314: Proxy traps on a value handed to the host (result and arguments)",
    code: "let busy = false;\nconst seen = (args) => { if (busy) return; busy = true; try { for (const a of args) damage(a) } finally { busy = false } };\nconst trap = { get(t, k, r) { seen([t, r]); return Reflect.get(t, k, r) }, ownKeys(t) { seen([t]); return Reflect.ownKeys(t) }, getPrototypeOf(t) { seen([t]); return null } };\nawait probe.take(new Proxy({ a: 1 }, trap));\nreturn new Proxy({ b: 2 }, trap)",
    check: (r) => {
      expect(r.value).toEqual({ b: 2 });
      expect(namespaceArgs.at(-1)).toEqual([{ a: 1 }]);
    },
  },
  {
    name: "vm2 CVE-2023-37466: patched Promise.prototype.then to intercept host-settled promises",
    code: "const orig = Promise.prototype.then;\nconst seen = [];\nPromise.prototype.then = function (a, b) { seen.push(this); for (const x of arguments) damage(x); return orig.call(this, a, b) };\nconst v = await add(2, 3);\nreturn [v, seen.some(damage)]",
    check: returns([5, false]),
  },
  {
    name: "Symbol.species and Symbol.iterator abuse on arrays given to parallel()",
    code: "class Evil extends Array { static get [Symbol.species]() { return function () { damage(this); return [] } } }\nconst tasks = new Evil();\ntasks.push(() => add(1, 2));\nconst out = await parallel(tasks);\nreturn Array.isArray(out)",
    check: returns(true),
  },
  {
    name: "inspect.custom, toJSON and getters on the returned value run only inside the sandbox",
    code: "const v = { [Symbol.for('nodejs.util.inspect.custom')]() { damage(this); return 'ESCAPED' }, toJSON() { return { ok: damage(this) } } };\nconsole.log(v);\nreturn v",
    check: returns({ ok: false }),
  },
  {
    name: "isolated-vm style: a sandbox function passed to a tool or a host function is never callable there",
    code: "let refused; try { await echo({ text: 'x', cb: () => damage(this) }) } catch (e) { refused = e.code }\nawait probe.take(() => 'ESCAPED', { f() {} });\nreturn refused",
    check: (r) => {
      expect(r.value).toBe("TOOL_INVALID_ARGS");
      const [fn, obj] = namespaceArgs.at(-1)! as [Opaque, { f: Opaque }];
      expect(fn).toBeInstanceOf(Opaque);
      expect(fn.tag).toEqual({ $pda: "function", name: "" });
      expect(obj.f.tag).toEqual({ $pda: "function", name: "f" });
    },
  },
  {
    name: "prototype pollution inside the sandbox does not reach the host or the tool's arguments",
    code: "Object.prototype.polluted = 'yes';\nArray.prototype.extra = 1;\nObject.defineProperty(Object.prototype, 'text', { get() { return 'injected' }, configurable: true });\nreturn await echo({ text: 'mine' })",
    check: (r) => {
      expect(r.value).toEqual({ text: "mine", times: 1 });
      const last = host.received.at(-1)!.args;
      expect(Object.getPrototypeOf(last)).toBe(Object.prototype);
      expect(Object.keys(last).sort()).toEqual(["text", "times"]);
    },
  },
  {
    name: "an own __proto__ key in tool arguments (JSON.parse) stays data on the host",
    code: 'const args = JSON.parse(\'{"text": "t", "__proto__": {"polluted": "yes"}, "constructor": {"prototype": {"polluted": "yes"}}}\');\nreturn await echo(args)',
    check: (r) => {
      expect(r.error).toBeUndefined();
      const last = host.received.at(-1)!.args;
      expect(Object.getPrototypeOf(last)).toBe(Object.prototype);
      expect(Object.prototype.hasOwnProperty.call(last, "__proto__")).toBe(true);
      expect((last as { polluted?: unknown }).polluted).toBeUndefined();
    },
  },
  {
    name: "an own __proto__ key and forged $pda tags in the returned value and in host arguments",
    code: 'await probe.take(JSON.parse(\'{"$pda": "bigint", "value": "1"}\'), JSON.parse(\'{"__proto__": {"polluted": "yes"}}\'));\nreturn JSON.parse(\'{"__proto__": {"polluted": "yes"}, "$pda": "regexp", "source": "(a+)+$"}\')',
    check: (r) => {
      const v = r.value as Record<string, unknown>;
      expect(Object.prototype.hasOwnProperty.call(v, "__proto__")).toBe(true);
      expect(v.polluted).toBeUndefined();
      expect(v.$$pda).toBe("regexp");
      const [forged, proto] = namespaceArgs.at(-1)! as [Record<string, unknown>, Record<string, unknown>];
      expect(forged).toEqual({ $pda: "bigint", value: "1" });
      expect(proto.polluted).toBeUndefined();
    },
  },
  {
    name: "dynamic import of node and quickjs-libc modules",
    code: "const out = [];\nfor (const m of ['fs', 'node:child_process', 'std', 'os', 'file:///etc/passwd', 'data:text/javascript,export default 1']) { try { await import(m); out.push('ESCAPED ' + m) } catch (e) { out.push(e.name) } }\nreturn out",
    check: (r) => {
      expect(r.error).toBeUndefined();
      expect(JSON.stringify(r.value)).not.toContain("ESCAPED");
    },
  },
  {
    name: "no host globals: process, require, timers, network, wasm, quickjs-libc, the prelude's host object",
    code: "return ['process', 'require', 'module', 'exports', 'Buffer', 'global', 'setTimeout', 'setInterval', 'setImmediate', 'queueMicrotask', 'fetch', 'XMLHttpRequest', 'WebSocket', 'WebAssembly', 'Atomics', 'std', 'os', 'print', 'scriptArgs', 'host', 'hostCall', '__pda'].filter(n => typeof globalThis[n] !== 'undefined' || (() => { try { return typeof eval(n) !== 'undefined' } catch { return false } })())",
    check: returns([]),
  },
  {
    name: "the global object holds only standard built-ins and what the sandbox binds",
    code: "return Object.getOwnPropertyNames(globalThis).filter(n => !['Error','EvalError','RangeError','ReferenceError','SyntaxError','TypeError','URIError','InternalError','AggregateError','Array','Object','Function','Iterator','parseInt','parseFloat','isNaN','isFinite','decodeURI','decodeURIComponent','encodeURI','encodeURIComponent','escape','unescape','Infinity','NaN','undefined','eval','Number','Boolean','String','Math','Reflect','Symbol','globalThis','BigInt','Date','RegExp','JSON','Proxy','Map','Set','WeakMap','WeakSet','ArrayBuffer','SharedArrayBuffer','Uint8ClampedArray','Int8Array','Uint8Array','Int16Array','Uint16Array','Int32Array','Uint32Array','BigInt64Array','BigUint64Array','Float16Array','Float32Array','Float64Array','DataView','Promise','WeakRef','FinalizationRegistry'].includes(n)).sort()",
    check: returns(
      [
        "ToolError",
        "add",
        "callTool",
        "configure",
        "console",
        "crash",
        "data",
        "divide",
        "echo",
        "get_weather",
        "math",
        "multiply",
        "other",
        "parallel",
        "probe",
        "rich",
        "slow",
        "subtract",
        "text",
      ].sort(),
    ),
  },
  {
    name: "indirect eval and sloppy-mode this give this context's global",
    code: "const g1 = (0, eval)('this');\nconst g2 = (function () { return this })();\nconst g3 = new Function('return this')();\nreturn [g1 === globalThis, g2 === globalThis, g3 === globalThis, [g1, g2, g3].some(damage)]",
    check: returns([true, true, true, false]),
  },
  {
    name: "stack traces and function sources carry no host paths or host code",
    code: "const stacks = [new Error('a').stack];\ntry { await divide(1, 0) } catch (e) { stacks.push(e.stack) }\nawait add(1, 2).then(() => stacks.push(new Error('b').stack));\nconst sources = [add, console.log, parallel, ToolError, Function.prototype.toString].map(f => String(f));\nreturn [...stacks, ...sources].filter(s => /\\/work|\\/home|\\/tmp|file:|node_modules|node:internal/.test(s))",
    check: returns([]),
  },
  {
    name: "huge strings",
    code: "const out = [];\nfor (const make of [() => 'x'.repeat(2 ** 30), () => ''.padEnd(2 ** 31 - 1, 'ab'), () => new Array(2 ** 28).join('ab'), () => { let s = 'x'; for (;;) s += s }]) { try { make(); out.push('made') } catch (e) { out.push(e.name) } }\nreturn out",
    check: (r) => {
      expect(r.error).toBeUndefined();
      expect(r.value).not.toContain("made");
    },
  },
  {
    name: "deep recursion: plain, through getters, coercion and Proxy traps",
    code: "const out = [];\nconst tries = [() => { const f = () => f(); f() }, () => { const o = { get x() { return this.x } }; o.x }, () => { const o = { toString() { return `${o}` } }; String(o) }, () => { const p = new Proxy({}, { get(t, k) { return p[k] } }); p.x }];\nfor (const t of tries) { try { t(); out.push('returned') } catch (e) { out.push(e.name) } }\nfunction f() { return f() }\nreturn f()",
    check: failsWith("SANDBOX_STACK"),
  },
  {
    name: "deep recursion inside the engine's native code (nested JSON) is contained",
    code: "const text = '['.repeat(500000) + ']'.repeat(500000);\nreturn JSON.parse(text).length",
    check: failsWith("SANDBOX_STACK"),
  },
  {
    name: "infinite loop before any await",
    code: "for (;;) {}",
    limits: QUICK,
    check: failsWith("SANDBOX_TIMEOUT"),
  },
  {
    name: "infinite loop after an await, inside a callback the host's settle runs",
    code: "await add(1, 2).then(() => { for (;;) {} })",
    limits: QUICK,
    check: failsWith("SANDBOX_TIMEOUT"),
  },
  {
    name: "catching the interruption and looping again in finally",
    code: "try { for (;;) {} } catch (e) { for (;;) {} } finally { for (;;) {} }",
    limits: QUICK,
    check: failsWith("SANDBOX_TIMEOUT"),
  },
  {
    name: "a getter that never returns, hit while the host's result is being encoded",
    code: "return { get x() { for (;;) {} } }",
    limits: QUICK,
    check: failsWith("SANDBOX_TIMEOUT"),
  },
  {
    name: "promise-job flood: a microtask chain that never empties",
    code: "(function f() { Promise.resolve().then(f) })();\nawait new Promise(() => {})",
    limits: QUICK,
    check: failsWith("SANDBOX_TIMEOUT"),
  },
  {
    name: "a thenable whose then never returns",
    code: "return { then(resolve) { for (;;) {} } }",
    limits: QUICK,
    check: failsWith("SANDBOX_TIMEOUT"),
  },
  {
    name: "catastrophic regular-expression backtracking",
    code: "return /^(a+)+$/.test('a'.repeat(40) + 'b')",
    limits: QUICK,
    check: failsWith("SANDBOX_TIMEOUT"),
  },
  {
    name: "CPU bombs in native code: array methods over a sparse length of billions",
    code: "const out = [];\nconst sparse = new Array(2 ** 32 - 1);\nconst grown = []; grown.length = 2 ** 32 - 1;\nfor (const run of [() => sparse.indexOf(1), () => sparse.join(''), () => grown.forEach(x => x), () => sparse.filter(Boolean), () => sparse.reduce((a, b) => a, 0), () => sparse.includes(1), () => sparse.reverse(), () => String(sparse), () => Array.prototype.lastIndexOf.call({ length: 2 ** 53 - 1 }, 1)]) { try { run(); out.push('ran') } catch (e) { out.push(e.name) } }\nreturn out",
    check: returns(Array(9).fill("RangeError")),
  },
  {
    name: "an array-like whose length getter grows after the check (time-of-check/time-of-use)",
    code: "let n = 0;\nconst o = { get length() { return n++ < 1 ? 1 : 2 ** 32 - 1 } };\nconst first = Array.prototype.includes.call(o, 5);\nlet second = 'ran';\ntry { Array.prototype.join.call(o, '') } catch (e) { second = 'stopped' }\nreturn [first, second]",
    check: (r) => {
      // The first call saw length 1 and kept it; the second saw 2^32 - 1 and ran out of memory copying it.
      if (r.ok) expect(r.value).toEqual([false, "stopped"]);
      else expect(r.error?.code).toBe("SANDBOX_MEMORY");
    },
  },
  {
    name: "native iteration of a sparse array by a constructor",
    code: "return new Set(new Array(2 ** 32 - 1)).size",
    limits: QUICK,
    check: failsWith("SANDBOX_TIMEOUT"),
  },
  {
    name: "memory bombs: array doubling, Map growth, typed arrays",
    code: "const out = [];\nfor (const bomb of [() => { let a = [1]; for (;;) a = a.concat(a) }, () => { const m = new Map(); for (let i = 0; ; i++) m.set(i, { i }) }, () => { const a = []; for (;;) a.push(new Float64Array(1 << 17)) }]) { try { bomb() } catch (e) { out.push(String(e)) } }\nconst keep = []; for (;;) keep.push(new Uint8Array(1 << 20))",
    // ~3 s of work when quiet: on a busy machine the default 5 s limit would end it as a timeout instead.
    limits: { timeout_ms: 60_000 },
    check: failsWith("SANDBOX_MEMORY"),
  },
  {
    name: "finalizers that loop forever, left behind for the host to clean up",
    code: "const reg = new FinalizationRegistry(() => { for (;;) {} });\nfor (let i = 0; i < 10000; i++) reg.register({ i }, i);\nreturn 'left'",
    limits: QUICK,
    check: (r) => {
      expect(r.value === "left" || r.error?.code === "SANDBOX_TIMEOUT").toBe(true);
    },
  },
  {
    name: "tool-call flood through parallel()",
    code: "return parallel(Array.from({ length: 10000 }, () => () => add(1, 2)))",
    limits: { max_tool_calls: 20 },
    check: (r) => {
      expect(r.error?.code).toBe("SANDBOX_TOOL_LIMIT");
      expect(r.tool_calls.length).toBeLessThanOrEqual(20);
    },
  },
  {
    name: "output flood",
    code: "for (;;) console.log('spam '.repeat(1000))",
    limits: { max_log_bytes: 10_000 },
    check: failsWith("SANDBOX_LOG_TOO_LARGE"),
  },
  {
    name: "sabotaging the prelude's intrinsics before calling tools and returning",
    code: "JSON.stringify = () => 'ESCAPED'; JSON.parse = () => ({ ESCAPED: 1 }); Reflect.apply = () => 'ESCAPED'; Object.keys = () => []; Array.from = () => []; Promise.all = () => 'ESCAPED';\nconst v = await add(1, 2);\nreturn { v, p: await parallel([() => add(2, 2)]) }",
    check: returns({ v: 3, p: [4] }),
  },
  {
    name: "one step leaves traps for the next (run twice: the second must be clean)",
    code: "const dirty = typeof leaked !== 'undefined' || ({}).trap !== undefined || ToolError.prototype.trap !== undefined;\nglobalThis.leaked = 1; Object.prototype.trap = 1; ToolError.prototype.trap = 1; Promise.prototype.then = () => 'ESCAPED';\nreturn dirty",
    check: returns(false),
  },
];

function prototypeSnapshot(): string[] {
  return [
    Object,
    Array,
    Function,
    String,
    Number,
    Boolean,
    Promise,
    Error,
    RegExp,
    Map,
    Set,
    Date,
    Symbol,
  ].map((C) => Object.getOwnPropertyNames(C.prototype).sort().join(","));
}

describe("escape attempts", () => {
  let protos: string[];
  let globals: string[];

  beforeAll(() => {
    (globalThis as Record<string, unknown>).__pdaCanary = "intact";
    protos = prototypeSnapshot();
    globals = Object.getOwnPropertyNames(globalThis).sort();
  });

  afterAll(() => {
    rmSync(CANARY_FILE, { force: true });
    delete (globalThis as Record<string, unknown>).__pdaCanary;
  });

  it(`has at least 25 payloads (${PAYLOADS.length})`, () => {
    expect(PAYLOADS.length).toBeGreaterThanOrEqual(25);
  });

  for (const p of PAYLOADS) {
    it(p.name, async () => {
      const runs = p.name.startsWith("one step leaves traps") ? 2 : 1;
      for (let i = 0; i < runs; i++) {
        const r = await runCode(`${DAMAGE}${p.code}`, host, limits(p.limits), { namespaces });
        p.check(r);
        expect(JSON.stringify(r.value ?? null)).not.toContain("ESCAPED");
      }
      // The host, untouched and still answering.
      expect(existsSync(CANARY_FILE)).toBe(false);
      expect((globalThis as Record<string, unknown>).__pdaCanary).toBe("intact");
      expect(prototypeSnapshot()).toEqual(protos);
      expect(Object.getOwnPropertyNames(globalThis).sort()).toEqual(globals);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(await host.call("math.add", { a: 1, b: 2 })).toBe(3);
      const after = await runCode("return add(40, 2)", host, limits());
      expect(after).toMatchObject({ ok: true, value: 42 });
    });
  }
});
