/**
 * The JavaScript that runs in each engine's context before a step's code: it binds the tool functions,
 * `ToolError`, `parallel`, `callTool` and `console`, and implements the sandbox half of the value codec
 * (codec.ts is the host half). It is evaluated as one function expression and called with the host's functions
 * once per engine (warm.ts), before the engine's memory image is taken, so what does not depend on the step is
 * done once: the intrinsics captured, the helpers made, the built-ins bound, the cold part compiled. It returns
 * `{ bind, begin }`: `bind(toolsText)` binds a tool set (once per engine and tool set: its own image is taken
 * after), and each step calls `begin(configText)` with its limits, replay log, seed and clock, which returns
 * `{ start, settle, collect }` to the host. It stores nothing of the host where the step's code
 * can reach it (the host functions live only in this closure).
 *
 * Host functions (arguments are strings and numbers only; none is on the per-call path):
 *   log(level, text)          one console line, already cut to the log budget
 *   suggest(name) → "a, b"    closest known names, for error messages
 *   limit(name)               the step called past max_tool_calls: the host ends it
 *   done(status, text)        1: the step returned (tagged JSON); 0: it threw (error JSON);
 *                             2: the encoded value was too large (text = its length)
 *   cold() → source           PRELUDE_COLD (below), compiled once per engine, before its image is taken
 * Host → sandbox, the per-call path (fast.ts makes each a few raw FFI calls):
 *   settle(id, ok, payload)   a call finished: payload is tagged JSON (ok 1) or error JSON (ok 0)
 *   collect() → requests      the calls made since the last collect, which wait in an outbox (a string, see
 *                             invoke) until the host takes them (once the sandbox is idle): entries
 *                             "id \x01 kind(0 tool|1 namespace|2 tool answered from the log) \x01 JSON name \x01 tagged JSON
 *                             arguments array", or "n \x01 3" for the next n calls answered from the log that
 *                             were the logged ones (their arguments as JSON writes them), or "readings \x01 4"
 *                             for the clock readings a durable step took since (see clockNow); joined by \x02
 * JSON never contains raw control characters, so the separators cannot be forged by values; they are not
 * \x00 because the strings cross as C strings.
 */
export const PRELUDE_FILE = "pda-prelude.js";

export const PRELUDE = String.raw`(function (host) {
"use strict";
const hostLog = host.log, hostSuggest = host.suggest, hostLimit = host.limit, hostDone = host.done;
// Intrinsics captured before the step's code runs, so code that patches them only breaks itself.
const G = globalThis, O = Object, A = Array, _apply = Reflect.apply, _get = Reflect.get, _Promise = Promise;
const _from = Array.from, _reject = Promise.reject.bind(Promise), _arraySlice = Array.prototype.slice;
const _then = Promise.prototype.then, _resolve = Promise.resolve.bind(Promise), _all = Promise.all.bind(Promise);
const _stringify = JSON.stringify, _parse = JSON.parse, _keys = O.keys, _entries = O.entries;
const _defineProperty = O.defineProperty, _isArray = A.isArray, _isView = ArrayBuffer.isView;
const _slice = String.prototype.slice, _test = RegExp.prototype.test, _toString = O.prototype.toString;
const _getTime = Date.prototype.getTime, _toISO = Date.prototype.toISOString, _String = String;
const _split = String.prototype.split;
const _getProto = O.getPrototypeOf, _hasOwn = O.prototype.hasOwnProperty;
const _eval = G.eval, hostCold = host.cold;
// This step's config, set by begin (below) before the step's code runs; its max_tool_calls kept apart, as it is
// read on every call.
let config, maxToolCalls = 0;
// A durable step run again (sandbox.ts replayJson): its log by tool call position, in columns, since QuickJS
// parses one array of values far faster than an array per call. rKind: 1 the call succeeded, 2 the same with
// "$pda" tags in its value to revive, 0 it failed, -1 the host answers it. rValue: the logged value (parsed with
// the config), or {code, tool, message}. rName: the index in rNames of the logged call's name, or -1 when the
// log does not hold its arguments whole; rArgs: those arguments' JSON. Such a call settles here at once, with no
// round trip; it still goes to the host, which checks it against the log before any later call is made: whole
// (kind 2), or, when it is the logged call (its name, and its arguments as JSON writes them), only counted
// (kind 3, a run of such calls in one entry), since there is nothing in it the log does not hold.
let replaying = false, replayLength = 0, rKind, rValue, rName, rNames, rArgs;
// A durable step's clock (config.clock; sandbox.ts tookClock). Date reads the real time, and each reading goes
// to the host with the next call, which logs it with that call; a step run again gets the logged readings back
// in the order it took them, so code that puts the time in a call's arguments makes the logged call again.
// Past them, the real clock again (never before the last one handed back). Numbers, a run of one value as the
// value then -(repeats): code that waits on the clock in a loop reads one value many times.
let clockOn = false, clockLog, clockAt = 0, clockLen = 0, clockVal = 0, clockRep = 0, realNow;
let clockOut = "", clockLast = -1, clockRun = 0;
const CLOCK_MAX = 65536;
const TAG = "$pda", ESC = /^\$+pda$/;

function setOwn(o, k, v) { _defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true }); }
// setOwn for a fresh plain object while Object.prototype is as built: there an assignment makes the same own
// property at a fraction of the cost, except for the one accessor, __proto__.
function putOwn(o, k, v) { if (k === "__proto__") setOwn(o, k, v); else o[k] = v; }
function cut(s, n) { return s.length > n ? _apply(_slice, s, [0, n]) : s; }

// True for values JSON carries exactly (finite numbers, strings, booleans, null, and plain arrays/objects of
// them with ordinary keys), which need no replacer: the common case of tool arguments, made cheap.
// Scalars are tested inline (x - x === 0: a finite number), as a call per value is what costs in QuickJS.
function plain(v, depth) {
  switch (typeof v) {
    case "string": case "boolean": return true;
    case "number": return v - v === 0;
    case "object": break;
    default: return false;
  }
  if (v === null) return true;
  if (depth > 3) return false;
  if (_isArray(v)) {
    if (v.length > 64) return false;
    for (let i = 0; i < v.length; i++) {
      if (!(i in v)) return false;
      const x = v[i], t = typeof x;
      if (t === "string" || t === "boolean" || (t === "number" && x - x === 0)) continue;
      if (!plain(x, depth + 1)) return false;
    }
    return true;
  }
  if (_getProto(v) !== O.prototype) return false;
  const keys = _keys(v);
  if (keys.length > 64) return false;
  for (let i = 0; i < keys.length; i++) {
    if (keys[i][0] === "$" && _apply(_test, ESC, [keys[i]])) return false;
    const x = v[keys[i]], t = typeof x;
    if (t === "string" || t === "boolean" || (t === "number" && x - x === 0)) continue;
    if (!plain(x, depth + 1)) return false;
  }
  return true;
}
// A call's arguments (a real array, never sparse). Numbers and booleans, the arguments of math and robot
// tools, are written out here directly: QuickJS's JSON.stringify costs more than the loop.
function encodeArgs(args) {
  let out = "[";
  for (let i = 0; i < args.length; i++) {
    const x = args[i], t = typeof x;
    if (t === "number" && x - x === 0) out += i ? "," + x : "" + x;
    else if (t === "boolean") out += i ? "," + x : "" + x;
    else return encode(args);
  }
  return out + "]";
}
function encode(value) {
  return plain(value, 0) ? _stringify(value) : _stringify(value, cold().replacer);
}

function decode(text) {
  return text.indexOf(TAG) >= 0 ? cold().revive(_parse(text)) : _parse(text);
}

// Typed arrays by name, captured now for the cold part, which may be compiled after the step's code has run.
const TYPED = { Int8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array,
  Float64Array, BigInt64Array, BigUint64Array };
let coldParts;
function cold() {
  coldParts = coldParts || _eval(hostCold())({ O, _apply, _from, _stringify, _keys, _entries, _isArray, _isView,
    _slice, _test, _toString, _getTime, _toISO, _String, ESC, TYPED, ToolError, setOwn, cut });
  return coldParts;
}

class ToolError extends Error {
  constructor(code, tool, message) {
    super(message);
    this.name = "ToolError";
    this.code = code;
    this.tool = tool;
  }
}

// Calls in flight: id → [resolve, reject]. A null-prototype object needs no methods the code could patch.
const pending = O.create(null);
// The requests not yet collected, as one string: an array would write through Array.prototype, where the
// code can put an accessor on an index and rewrite what the host receives.
let outbox = "";
let nextId = 0, toolCalls = 0;
let toolSeq = 0, asLogged = 0;
function post(request) {
  if (asLogged !== 0) {
    const run = asLogged + "\x013";
    asLogged = 0;
    outbox = outbox === "" ? run : outbox + "\x02" + run;
  }
  // The readings since the last request, for the host to log with this call: "readings \x01 4". Only before a
  // request: readings no call follows matter to no replay.
  if (clockOut !== "" && request !== "") {
    if (clockRun > 0) clockOut += ",-" + clockRun;
    const readings = clockOut + "\x014";
    clockOut = ""; clockLast = -1; clockRun = 0;
    outbox = outbox === "" ? readings : outbox + "\x02" + readings;
  }
  if (request !== "") outbox = outbox === "" ? request : outbox + "\x02" + request;
}
function invoke(kind, jsonName, name, args) {
  // Counted here so a loop of unawaited calls is stopped at once, not when the host next collects them.
  // Namespace calls count too: they are host work the code asks for, as tool calls are.
  if (++toolCalls > maxToolCalls) hostLimit(cut(name, 256));
  let json;
  try {
    json = encodeArgs(args);
  } catch (e) {
    return _reject(new ToolError("TOOL_INVALID_ARGS", name, name + ": the arguments cannot be sent: " + (e && e.message)));
  }
  const id = ++nextId;
  let logged = -1;
  if (kind === 0 && replaying) {
    logged = toolSeq++;
    if (logged < replayLength && rKind[logged] >= 0) kind = 2;
    else logged = -1;
  }
  post(id + "\x01" + kind + "\x01" + jsonName + "\x01" + json);
  // Answered from the log: settled now, with nothing left pending.
  if (logged >= 0) return answerLogged(logged);
  return new _Promise(function (resolve, reject) { pending[id] = [resolve, reject]; });
}
function settle(id, ok, text) {
  id |= 0; // it comes as a float: as an int it is a cheaper property key
  const p = pending[id];
  if (p === undefined) return;
  delete pending[id];
  answer(p[0], p[1], ok, text);
}
function answer(resolve, reject, ok, text) {
  if (ok !== 1) {
    const e = _parse(text);
    return reject(new ToolError(e.code, e.tool, e.message));
  }
  let value;
  try { value = decode(text); } catch (e) { return reject(e); }
  return resolve(value);
}
// The logged outcome at position at. Each is handed out once, so its value needs no copy.
function answerLogged(at) {
  const kind = rKind[at], v = rValue[at];
  if (kind === 0) return _reject(new ToolError(v.code, v.tool, v.message));
  if (kind === 1) return _resolve(v);
  let value;
  try { value = cold().revive(v); } catch (e) { return _reject(e); }
  return _resolve(value);
}
function clockNow() {
  if (clockRep > 0) { clockRep--; return clockVal; }
  if (clockAt < clockLen) {
    const x = clockLog[clockAt++];
    if (x >= 0) return (clockVal = x);
    clockRep = -x - 1;
    return clockVal;
  }
  let t = realNow();
  if (t < clockVal) t = clockVal;
  if (t === clockLast) clockRun++;
  else if (clockOut.length < CLOCK_MAX) {
    if (clockRun > 0) { clockOut += ",-" + clockRun; clockRun = 0; }
    clockOut = clockOut === "" ? "" + t : clockOut + "," + t;
    clockLast = t;
  } else clockLast = -2; // full: nothing more this time (a replay reads the real clock past what was kept)
  return t;
}
function collect() {
  post("");
  const requests = outbox;
  outbox = "";
  return requests;
}

function suggestion(name) {
  // Cut: the host's search costs length × length, and no real name is this long.
  const s = hostSuggest(cut(name, 257));
  return s ? "; closest: " + s : "";
}
// A tool's function, and a namespace function's. A tool call that is the logged call at its place, asked again
// (its name, and its one argument as JSON writes it: the log holds a call's arguments as one object, the host
// maps positional ones onto the tool's names), is answered here from the log and counted, with nothing sent;
// any other goes to invoke. Compared as JSON text, as the log keys calls (the host hashes the same text), so a
// value JSON writes alike (NaN and null, a Date and its ISO string) is alike here as there. In the function
// itself, as each function call is what a replayed call costs in QuickJS.
function toolFunction(kind, qualified, name) {
  const jsonName = _stringify(qualified);
  const f = kind !== 0
    ? function (...args) { return invoke(kind, jsonName, qualified, args); }
    : function (...args) {
      const at = toolSeq;
      if (at < replayLength && args.length === 1) {
        const n = rName[at];
        if (n >= 0 && rNames[n] === qualified) {
          let same = false;
          try { same = _stringify(args[0]) === rArgs[at]; } catch (e) {}
          // Unless a toJSON made calls meanwhile, which took this place (the host checks this one then), or the
          // step is at max_tool_calls (invoke ends it).
          if (same && toolSeq === at && toolCalls < maxToolCalls) {
            toolCalls++;
            toolSeq = at + 1;
            nextId++;
            asLogged++;
            return rKind[at] === 1 ? _resolve(rValue[at]) : answerLogged(at);
          }
        }
      }
      return invoke(0, jsonName, qualified, args);
    };
  _defineProperty(f, "name", { value: name });
  return f;
}
// The bound tools' functions by qualified name, for callTool (bind fills it).
const byQualified = O.create(null);
function parallel(tasks) {
  if (!_isArray(tasks)) return _reject(new TypeError("parallel() takes an array of functions, e.g. parallel([() => a(), () => b()])"));
  return _all(tasks.map(function (t) { return typeof t === "function" ? t() : t; }));
}
function callTool(name, ...args) {
  const n = _String(name);
  const f = byQualified[n];
  return f !== undefined ? _apply(f, undefined, args) : invoke(0, _stringify(n), n, args);
}

function logger(level) {
  return function () {
    const budget = { left: config.maxLogChars };
    const parts = [];
    for (let i = 0; i < arguments.length && budget.left > 0; i++) {
      const a = arguments[i];
      const s = typeof a === "string" ? a : typeof a === "number" || typeof a === "boolean" ? _String(a) : cold().fmt(a, budget, 0, []);
      budget.left -= s.length + 1;
      parts.push(s);
    }
    hostLog(level, cut(parts.join(" "), config.maxLogChars + 1));
  };
}
const consoleObject = { log: logger("log"), info: logger("info"), warn: logger("warn"), error: logger("error"), debug: logger("debug") };

function bindGlobal(name, value) {
  if (name in G) return false;
  _defineProperty(G, name, { value, writable: true, configurable: true, enumerable: false });
  return true;
}

// The names come from the host (core/tool-names.ts): every global is an identifier that names nothing built
// in, and the built-ins are bound first, so no tool or server can take their place.
bindGlobal("ToolError", ToolError);
bindGlobal("parallel", parallel);
bindGlobal("callTool", callTool);
bindGlobal("console", consoleObject);



function errorJson(e) {
  let info;
  try {
    if (e instanceof Error) {
      info = { name: _String(e.name), message: cut(_String(e.message), 4000), stack: cut(_String(e.stack || ""), 4000) };
      if (e instanceof ToolError) { info.toolError = true; info.code = _String(e.code); info.tool = _String(e.tool); }
    } else {
      info = { name: "Thrown", message: cut(cold().fmt(e, { left: 4000 }, 0, []), 4000), stack: "" };
    }
  } catch (x) {
    info = { name: "Thrown", message: "a value that cannot be described was thrown", stack: "" };
  }
  return _stringify(info);
}
function finish(ok, v) {
  if (!ok) { hostDone(0, errorJson(v)); return; }
  let text;
  try { text = encode(v); } catch (e) {
    hostDone(0, _stringify({ name: "ResultError", message: "the step's return value cannot be sent: " + _String(e && e.message), stack: "" }));
    return;
  }
  if (text.length > config.maxResultChars) hostDone(2, _String(text.length));
  else hostDone(1, text);
}
function start(fn) {
  if (typeof fn !== "function") { finish(false, new TypeError("the step's code did not compile to a function")); return; }
  _apply(_then, fn(), [function (v) { finish(true, v); }, function (e) { finish(false, e); }]);
}


// QuickJS checks the wall-time interrupt only while bytecode runs. Array methods loop in native code over
// length, which a sparse array (new Array(2 ** 32 - 1)) or an array-like sets to billions at no memory cost:
// such a loop would block the host far past timeout_ms. No real array of this step can be longer than its
// memory divided by 8 bytes a value, so longer lengths are refused; array-likes (whose length a getter could
// change between check and use) are first copied into a real array, which memory bounds.
function guardArrayMethods() {
  const AP = A.prototype;
  const mutating = ["copyWithin", "fill", "reverse", "sort", "splice", "unshift", "shift"];
  const names = mutating.concat(["concat", "every", "filter", "find", "findIndex", "findLast", "findLastIndex",
    "flat", "flatMap", "forEach", "includes", "indexOf", "join", "lastIndexOf", "map", "reduce", "reduceRight",
    "slice", "some", "toLocaleString", "toReversed", "toSorted", "toSpliced", "with"]);
  const tooLong = function (name, n) {
    return new RangeError("Array.prototype." + name + ": length " + n + " is longer than any array this step's memory can hold (a sparse array?)");
  };
  for (let n = 0; n < names.length; n++) {
    const name = names[n], orig = AP[name];
    if (typeof orig !== "function") continue;
    // Not mutating.indexOf: indexOf may already be wrapped here, and the wrapper's checks cost more.
    const mutates = n < mutating.length;
    const wrapper = { [name]() {
      const limit = config.maxArrayLength;
      const args = _from(arguments);
      if (_isArray(this) || this === null || this === undefined) {
        if (this && this.length > limit) throw tooLong(name, this.length);
        return _apply(orig, this, args);
      }
      const self = O(this);
      const copy = typeof this === "string" || this instanceof String ? _apply(_split, _String(this), [""]) : _from(self);
      if (copy.length > limit) throw tooLong(name, copy.length);
      const result = _apply(orig, copy, args);
      if (!mutates) return result;
      const before = self.length;
      for (let i = 0; i < copy.length; i++) self[i] = copy[i];
      for (let i = copy.length; i < before; i++) delete self[i];
      self.length = copy.length;
      return result === copy ? self : result;
    } }[name];
    _defineProperty(wrapper, "length", { value: orig.length });
    _defineProperty(AP, name, { value: wrapper, writable: true, configurable: true, enumerable: false });
  }
}
guardArrayMethods();

// Date through clockNow, made once per engine (its memory image keeps it) rather than in every step's begin: a
// step that is not durable (no config.clock) reads the real clock through it.
function installDate() {
  const RealDate = Date, _construct = Reflect.construct, _dateString = RealDate.prototype.toString;
  realNow = RealDate.now;
  const now = function now() { return clockOn ? clockNow() : realNow(); };
  const StepDate = function Date(...args) {
    if (new.target === undefined) return _apply(_dateString, new RealDate(now()), []);
    return _construct(RealDate, args.length === 0 ? [now()] : args, new.target);
  };
  StepDate.prototype = RealDate.prototype;
  _defineProperty(StepDate, "length", { value: RealDate.length });
  _defineProperty(RealDate.prototype, "constructor", { value: StepDate, writable: true, configurable: true });
  _defineProperty(StepDate, "now", { value: now, writable: true, configurable: true });
  _defineProperty(StepDate, "parse", { value: RealDate.parse, writable: true, configurable: true });
  _defineProperty(StepDate, "UTC", { value: RealDate.UTC, writable: true, configurable: true });
  _defineProperty(G, "Date", { value: StepDate, writable: true, configurable: true, enumerable: false });
}
installDate();


// Compiled now, once per engine (warm.ts keeps it in the memory image), rather than in the first step that needs it.
cold();

// The host's two doors. bind: a tool set bound as globals, once per engine and tool set (warm.ts keeps each
// set's memory image). begin: per step, its config (limits, replay log, seeded Math.random and Date).
return {
  bind(toolsText) {
    const bound = _parse(toolsText);
    // One object per server (and per namespace), by its global: every tool by its own name and its alias.
    const groups = O.create(null), labels = O.create(null);
    function groupOf(global, id) {
      if (!groups[global]) { groups[global] = {}; labels[global] = id; }
      return groups[global];
    }
    const plainNames = [];
    for (const t of bound.tools) {
      const group = groupOf(t.s, t.sid), f = toolFunction(0, t.q, t.n);
      byQualified[t.q] = f;
      putOwn(group, t.n, f);
      if (t.m !== t.n) putOwn(group, t.m, f);
      if (t.g) plainNames.push([t.g, f]);
    }
    for (const ns of bound.ns) {
      const group = groupOf(ns.g, ns.id);
      for (const fn of ns.f) if (!_apply(_hasOwn, group, [fn])) putOwn(group, fn, toolFunction(1, ns.id + "." + fn, fn));
    }
    for (const g of _keys(groups)) {
      const group = groups[g], label = labels[g];
      const proxy = new Proxy(group, {
        get(target, key, receiver) {
          if (typeof key === "string" && !(key in target) && key !== "then" && key !== "toJSON") {
            throw new TypeError(label + "." + key + " is not a function of " + label + suggestion(label + "." + key));
          }
          return _get(target, key, receiver);
        },
      });
      bindGlobal(g, proxy);
    }
    for (let i = 0; i < plainNames.length; i++) bindGlobal(plainNames[i][0], plainNames[i][1]);
  },
  begin(configText) {
    config = _parse(configText);
    maxToolCalls = config.maxToolCalls;
    const r = config.replay;
    if (r !== undefined) {
      replaying = true;
      rKind = r.kind; rValue = r.value; rName = r.name; rNames = r.names; rArgs = r.args;
      replayLength = rKind.length;
    }
    // Math.random from the step's seed (RunOptions seed) and Date from the clock above: a step run again to
    // replay its logged calls sees the same numbers and the same times, so it takes the same path.
    if (config.seed !== undefined) {
      let state = config.seed | 0;
      const _imul = Math.imul;
      // mulberry32: small, fast, and plenty for code that wants a random pick.
      _defineProperty(Math, "random", { writable: true, configurable: true, enumerable: false, value: function random() {
        state = (state + 0x6d2b79f5) | 0;
        let t = _imul(state ^ (state >>> 15), 1 | state);
        t = (t + _imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
      } });
    }
    if (config.clock !== undefined) {
      clockOn = true;
      clockLog = config.clock;
      clockLen = clockLog.length;
    }
    return { start, settle, collect };
  },
};
})`;

/**
 * What most steps never use — the tagged codec (values JSON cannot carry), base64, and console formatting of
 * objects — compiled by the prelude on first use: QuickJS parses ~0.07 ms per KB, and this is ~40% of it.
 * It is given the intrinsics the prelude captured before the step's code ran, and reads nothing else of the
 * global scope that the prelude would not also have read.
 */
export const PRELUDE_COLD = String.raw`(function (d) {
"use strict";
const { O, _apply, _from, _stringify, _keys, _entries, _isArray, _isView, _slice, _test, _toString, _getTime, _toISO,
  _String, ESC, TYPED, ToolError, setOwn, cut } = d;
const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
function kindOf(v) { return _apply(_slice, _apply(_toString, v, []), [8, -1]); }

function toBase64(u8) {
  const parts = [];
  let i = 0;
  for (; i + 2 < u8.length; i += 3) {
    const n = (u8[i] << 16) | (u8[i + 1] << 8) | u8[i + 2];
    parts.push(B64[n >> 18] + B64[(n >> 12) & 63] + B64[(n >> 6) & 63] + B64[n & 63]);
  }
  if (i < u8.length) {
    const n = (u8[i] << 16) | ((i + 1 < u8.length ? u8[i + 1] : 0) << 8);
    parts.push(B64[n >> 18] + B64[(n >> 12) & 63] + (i + 1 < u8.length ? B64[(n >> 6) & 63] : "=") + "=");
  }
  return parts.join("");
}
function fromBase64(s) {
  s = _String(s).replace(/[^A-Za-z0-9+/]/g, "");
  const out = new Uint8Array(Math.floor((s.length * 3) / 4));
  let o = 0;
  for (let i = 0; i < s.length; i += 4) {
    const n = (B64.indexOf(s[i]) << 18) | (B64.indexOf(s[i + 1]) << 12) |
      ((i + 2 < s.length ? B64.indexOf(s[i + 2]) : 0) << 6) | (i + 3 < s.length ? B64.indexOf(s[i + 3]) : 0);
    out[o++] = n >> 16;
    if (i + 2 < s.length) out[o++] = (n >> 8) & 255;
    if (i + 3 < s.length) out[o++] = n & 255;
  }
  return out.subarray(0, o);
}
function bytesOf(v) {
  return v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

function replacer(key, value) {
  const raw = this[key];
  switch (typeof raw) {
    case "undefined": return { $pda: "undefined" };
    case "number": return raw - raw === 0 ? raw : { $pda: "number", value: _String(raw) };
    case "bigint": return { $pda: "bigint", value: _String(raw) };
    case "function": return { $pda: "function", name: _String(raw.name) };
    case "symbol": return { $pda: "symbol", description: raw.description === undefined ? "" : raw.description };
  }
  if (raw === null || typeof raw !== "object") return value;
  if (raw instanceof Date) {
    const t = _apply(_getTime, raw, []);
    return { $pda: "date", value: t === t ? _apply(_toISO, raw, []) : null };
  }
  if (raw instanceof ArrayBuffer || _isView(raw)) {
    const tag = { $pda: "bytes", base64: toBase64(bytesOf(raw)) };
    const type = kindOf(raw);
    if (type !== "Uint8Array") tag.type = type;
    return tag;
  }
  if (raw instanceof Map) return { $pda: "map", entries: _from(raw.entries()) };
  if (raw instanceof Set) return { $pda: "set", values: _from(raw.values()) };
  if (raw instanceof RegExp) return { $pda: "regexp", source: raw.source, flags: raw.flags };
  if (raw instanceof Error) {
    const tag = { $pda: "error", name: _String(raw.name), message: _String(raw.message) };
    if (typeof raw.code === "string") tag.code = raw.code;
    if (typeof raw.tool === "string") tag.tool = raw.tool;
    return tag;
  }
  if (value === null || typeof value !== "object" || _isArray(value)) return value;
  const keys = _keys(value);
  let needs = false;
  for (let i = 0; i < keys.length; i++) if (_apply(_test, ESC, [keys[i]])) { needs = true; break; }
  if (!needs) return value;
  const out = {};
  for (let i = 0; i < keys.length; i++) setOwn(out, _apply(_test, ESC, [keys[i]]) ? "$" + keys[i] : keys[i], value[keys[i]]);
  return out;
}

function untag(t) {
  switch (t.$pda) {
    case "undefined": return undefined;
    case "number": return Number(t.value);
    case "bigint": return BigInt(t.value);
    case "date": return new Date(t.value === null ? NaN : t.value);
    case "bytes": {
      const bytes = fromBase64(t.base64);
      if (t.type === "ArrayBuffer") return bytes.slice().buffer;
      const Ctor = typeof t.type === "string" && O.prototype.hasOwnProperty.call(TYPED, t.type) ? TYPED[t.type] : undefined;
      if (!Ctor) return bytes;
      const buf = bytes.slice().buffer;
      return new Ctor(buf, 0, Math.floor(buf.byteLength / Ctor.BYTES_PER_ELEMENT));
    }
    case "map": return new Map(_isArray(t.entries) ? t.entries : []);
    case "set": return new Set(_isArray(t.values) ? t.values : []);
    case "regexp": return new RegExp(t.source, t.flags);
    case "error": {
      const e = t.code !== undefined ? new ToolError(t.code, t.tool, t.message) : new Error(t.message);
      if (t.code === undefined) e.name = t.name;
      return e;
    }
  }
  return t;
}
// Children first, in place on the fresh parse (a JSON.parse reviver would delete keys whose value is undefined).
function revive(value) {
  if (value === null || typeof value !== "object") return value;
  if (_isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = revive(value[i]);
    return value;
  }
  const keys = _keys(value);
  let escaped = false;
  for (let i = 0; i < keys.length; i++) {
    setOwn(value, keys[i], revive(value[keys[i]]));
    if (_apply(_test, ESC, [keys[i]])) escaped = true;
  }
  if (typeof value.$pda === "string") return untag(value);
  if (!escaped) return value;
  const out = {};
  for (let i = 0; i < keys.length; i++) setOwn(out, _apply(_test, ESC, [keys[i]]) ? _apply(_slice, keys[i], [1]) : keys[i], value[keys[i]]);
  return out;
}

function fmt(v, budget, depth, seen) {
  switch (typeof v) {
    case "string": return depth ? _stringify(cut(v, budget.left)) : v;
    case "number": case "boolean": return _String(v);
    case "bigint": return _String(v) + "n";
    case "undefined": return "undefined";
    case "function": return "[Function " + (v.name || "anonymous") + "]";
    case "symbol": return v.toString();
  }
  if (v === null) return "null";
  if (v instanceof Error) return (v.name === "ToolError" ? "ToolError[" + v.code + "]" : _String(v.name)) + ": " + _String(v.message);
  if (v instanceof Date) { const t = _apply(_getTime, v, []); return t === t ? _apply(_toISO, v, []) : "Invalid Date"; }
  if (seen.indexOf(v) >= 0) return "[Circular]";
  if (depth >= 6) return _isArray(v) ? "[Array]" : "[Object]";
  seen.push(v);
  const parts = [];
  let open = "{ ", close = " }", items;
  if (_isArray(v)) { open = "["; close = "]"; items = v.map(function (x) { return [null, x]; }); }
  else if (v instanceof Map) { open = "Map(" + v.size + ") { "; items = _from(v.entries()); }
  else if (v instanceof Set) { open = "Set(" + v.size + ") { "; items = _from(v.values()).map(function (x) { return [null, x]; }); }
  else if (_isView(v) || v instanceof ArrayBuffer) { const b = bytesOf(v); open = kindOf(v) + "(" + b.length + ") ["; close = "]"; items = _from(b.subarray(0, 64)).map(function (x) { return [null, x]; }); }
  else items = _entries(v);
  for (let i = 0; i < items.length; i++) {
    if (budget.left <= 0) { parts.push("…"); break; }
    const k = items[i][0];
    const s = (k === null ? "" : (typeof k === "string" ? k : fmt(k, budget, depth + 1, seen)) + (v instanceof Map ? " => " : ": ")) + fmt(items[i][1], budget, depth + 1, seen);
    budget.left -= s.length + 2;
    parts.push(s);
  }
  seen.pop();
  if (parts.length === 0) return _isArray(v) ? "[]" : open.trim() + close.trim();
  return open + parts.join(", ") + close;
}

return { replacer, revive, fmt };
})`;
