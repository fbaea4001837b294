/**
 * The names tools have in sandbox code: the one rule the sandbox's bindings (action/prelude.ts), the code
 * guard (heuristics/code.ts) and the signatures shown to the model (decision/tools.ts, action/args.ts) share.
 *
 * - A server (or host namespace) is a global object named by its id when the id is an identifier that names
 *   nothing built in; otherwise by an alias ("my-server" → my_server, "console" → console_2). A namespace
 *   given only to some steps (not in HOST_NAMESPACES) is claimed after the servers, so only a unique tool of
 *   the same name can be named differently in those steps than in the decision prompt.
 * - A tool is a member of its server's object under its raw name (`server["lint-files"]`) and, when that is
 *   not an identifier, also under an alias (`server.lint_files`).
 * - A tool whose name is unique across servers is also a global: its name when that is an identifier free of
 *   built-ins, reserved words and server globals, otherwise an alias.
 * Aliases replace every character outside [A-Za-z0-9_$] by "_", put "_" before a leading digit, and add
 * "_2", "_3"... until the name is free. Calls still go to the host by the qualified name `server.tool`.
 */

/** ECMAScript reserved words (and the strict-mode ones): never a binding. */
const RESERVED_WORDS = words(`
  await break case catch class const continue debugger default delete do else enum export extends false finally
  for function if implements import in instanceof interface let new null package private protected public
  return static super switch this throw true try typeof var void while with yield
`);

/** Globals of the sandbox's QuickJS context, and what the prelude binds beside the tools. */
export const SANDBOX_GLOBALS: ReadonlySet<string> = new Set(
  words(`
  Error EvalError RangeError ReferenceError SyntaxError TypeError URIError InternalError AggregateError Array
  Object Function Iterator parseInt parseFloat isNaN isFinite decodeURI decodeURIComponent encodeURI
  encodeURIComponent escape unescape Infinity NaN undefined eval Number Boolean String Math Reflect Symbol
  globalThis BigInt Date RegExp JSON Proxy Map Set WeakMap WeakSet ArrayBuffer SharedArrayBuffer
  Uint8ClampedArray Int8Array Uint8Array Int16Array Uint16Array Int32Array Uint32Array BigInt64Array
  BigUint64Array Float16Array Float32Array Float64Array DataView Promise WeakRef FinalizationRegistry arguments
  ToolError parallel callTool console
`),
);

/**
 * The host namespaces the runtime gives CODE steps (memory.*, agents.*): their names are kept for them whether
 * or not a step has them, so every place that names tools agrees without knowing which a step has. A server of
 * the same id shares the object (its tools win).
 */
export const HOST_NAMESPACES: ReadonlySet<string> = new Set(["memory", "agents"]);

function words(s: string): string[] {
  return s.trim().split(/\s+/);
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const RESERVED = new Set(RESERVED_WORDS);

/** True for a name usable as a variable: an identifier that is not a reserved word. */
export function isJsIdentifier(name: string): boolean {
  return IDENTIFIER.test(name) && !RESERVED.has(name);
}

function aliasBase(name: string): string {
  const t = name.replace(/[^A-Za-z0-9_$]/g, "_");
  return /^[0-9]/.test(t) || t === "" ? `_${t}` : t;
}

/** `name` itself when it is free, else its alias made unique against `taken`; the result is added to taken. */
function claim(name: string, taken: Set<string>, asIs: boolean): string {
  let pick = asIs && !taken.has(name) ? name : aliasBase(name);
  if (taken.has(pick) || RESERVED.has(pick)) {
    const base = pick;
    for (let i = 2; taken.has(pick) || RESERVED.has(pick); i++) pick = `${base}_${i}`;
  }
  taken.add(pick);
  return pick;
}

export interface ToolJsName {
  /** The global the tool is bound to (only a tool whose name is unique across servers has one). */
  global?: string;
  /** The global of its server's object. */
  group: string;
  /** Its identifier member of that object (its raw name when that is an identifier). */
  member: string;
  /** How code calls it, as the model is shown: the global, else `group.member`. */
  call: string;
}

export interface JsNames {
  /** By qualified name. */
  tools: Map<string, ToolJsName>;
  /** Server or namespace id → the global of its object. */
  groups: Map<string, string>;
}

/** The JavaScript names of `tools` and of host `namespaces` (ids), by the rule above. Pure. */
export function jsNames(
  tools: readonly { server: string; name: string; qualified: string; unique: boolean }[],
  namespaces: readonly string[] = [],
): JsNames {
  const taken = new Set<string>([...SANDBOX_GLOBALS, ...RESERVED_WORDS, ...HOST_NAMESPACES]);
  const groups = new Map<string, string>();
  for (const id of [...tools.map((t) => t.server), ...namespaces]) {
    if (!groups.has(id)) groups.set(id, HOST_NAMESPACES.has(id) ? id : claim(id, taken, isJsIdentifier(id)));
  }
  const members = new Map<string, Set<string>>();
  for (const t of tools) {
    let m = members.get(t.server);
    if (!m) members.set(t.server, (m = new Set()));
    m.add(t.name);
  }
  const out = new Map<string, ToolJsName>();
  for (const t of tools) {
    const group = groups.get(t.server)!;
    const own = members.get(t.server)!;
    // Any identifier works after a dot, reserved words included (`files.delete`).
    const member = IDENTIFIER.test(t.name) ? t.name : claim(t.name, own, false);
    const global = t.unique ? claim(t.name, taken, isJsIdentifier(t.name)) : undefined;
    out.set(t.qualified, { global, group, member, call: global ?? `${group}.${member}` });
  }
  return { tools: out, groups };
}
