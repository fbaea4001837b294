/**
 * Code guards: static checks of the model's JavaScript before it reaches the sandbox, so code that can never
 * run costs no sandbox run and no tool call. Scope analysis is deliberately flat (a name declared anywhere
 * counts as declared everywhere): a guard that misses a mistake costs one sandbox run, a guard that cries wolf
 * costs an attempt, so every doubt is resolved in favour of the code.
 */
import { parse, type Node, type AnyNode, type CallExpression, type Expression, type Program } from "acorn";
import { ancestor } from "acorn-walk";
import { distance } from "fastest-levenshtein";
import { SANDBOX_GLOBALS, isJsIdentifier, jsNames, type ToolInfo } from "../core/index.js";
import type { Finding } from "./finding.js";
import { FORBIDDEN_GLOBALS, JS_BUILTINS, SANDBOX_HELPERS } from "./js-names.js";

export interface CodeGuardOptions {
  /** Names the sandbox provides beside the tools; default SANDBOX_HELPERS (parallel, callTool, console, ...). */
  helpers?: readonly string[];
  /**
   * Host function groups beside the tools, as the sandbox gets them (`{ memory: { search } }`) or by name
   * (`{ memory: ["search"] }`): `memory.search(...)` is then checked like `server.tool(...)`, without arguments.
   */
  namespaces?: Readonly<Record<string, readonly string[] | Readonly<Record<string, unknown>>>>;
  /** More names to accept as defined (e.g. variables the loop injects). */
  extraGlobals?: readonly string[];
  /** Forbidden names the sandbox does provide after all (e.g. "setTimeout" if it gets a timer). */
  allow?: readonly string[];
  /** Nearest names offered for an unknown one (default 3). */
  maxSuggestions?: number;
}

export interface CodeGuardResult {
  /** False when a finding has severity block: do not run the code, send the findings back to the decision. */
  ok: boolean;
  findings: Finding[];
}

/** The names every check accepts when the options add none: built once, not per CODE step. */
const DEFAULT_KNOWN: ReadonlySet<string> = new Set([...JS_BUILTINS, ...SANDBOX_HELPERS]);

const PARSE_OPTIONS = {
  ecmaVersion: "latest",
  sourceType: "script",
  allowAwaitOutsideFunction: true,
  allowReturnOutsideFunction: true,
  locations: true,
} as const;

/** What a name in the code can resolve to, by the names the sandbox binds (core/tool-names.ts). */
interface ToolIndex {
  /**
   * Plain global → the tool bound to it; also a name several servers share (written as is, bound to none)
   * → those tools, for the "ambiguous" finding.
   */
  plain: Map<string, ToolInfo[]>;
  /** Server or namespace global → member name (and alias) → the tool, or null for a host function. */
  groups: Map<string, Map<string, ToolInfo | null>>;
  /** What callTool(name) takes: qualified names and the raw names of unique tools, as the host resolves them. */
  byName: Map<string, ToolInfo>;
  /** How a tool is called: its global when it has one, else group.member. */
  callName: (t: ToolInfo) => string;
  /** Every name worth suggesting, as it is written in code. */
  callable: string[];
}

/**
 * Indexes by tool list array, then by the namespaces' names: built once per list, not per CODE step (the loop
 * checks every step's code against the same hub list). The hub replaces its list array when its tools change,
 * never edits it in place (as toolRankerFor relies on too).
 */
const indexes = new WeakMap<readonly ToolInfo[], Map<string, ToolIndex>>();

function indexTools(tools: readonly ToolInfo[], namespaces: CodeGuardOptions["namespaces"] = {}): ToolIndex {
  const nsFns = Object.entries(namespaces).map(
    ([ns, fns]) => [ns, Array.isArray(fns) ? (fns as string[]) : Object.keys(fns)] as const,
  );
  let byNamespaces = indexes.get(tools);
  if (!byNamespaces) indexes.set(tools, (byNamespaces = new Map()));
  const key = JSON.stringify(nsFns);
  let index = byNamespaces.get(key);
  if (!index) byNamespaces.set(key, (index = buildIndex(tools, nsFns)));
  return index;
}

function buildIndex(
  tools: readonly ToolInfo[],
  nsFns: ReadonlyArray<readonly [string, string[]]>,
): ToolIndex {
  const names = jsNames(
    tools,
    nsFns.map(([ns]) => ns),
  );
  const plain = new Map<string, ToolInfo[]>();
  const groups = new Map<string, Map<string, ToolInfo | null>>();
  const byName = new Map<string, ToolInfo>();
  const group = (id: string) => {
    const global = names.groups.get(id)!;
    let g = groups.get(global);
    if (!g) groups.set(global, (g = new Map()));
    return g;
  };
  for (const t of tools) {
    const n = names.tools.get(t.qualified)!;
    if (n.global) plain.set(n.global, [t]);
    const g = group(t.server);
    g.set(t.name, t);
    g.set(n.member, t);
    byName.set(t.qualified, t);
    if (t.unique) byName.set(t.name, t);
  }
  for (const t of tools) {
    const free = !SANDBOX_GLOBALS.has(t.name) && !groups.has(t.name) && !plain.get(t.name)?.[0]?.unique;
    if (!t.unique && isJsIdentifier(t.name) && free) plain.set(t.name, [...(plain.get(t.name) ?? []), t]);
  }
  for (const [ns, fns] of nsFns) {
    const g = group(ns);
    for (const fn of fns) if (!g.has(fn)) g.set(fn, null);
  }
  const callName = (t: ToolInfo) => names.tools.get(t.qualified)!.call;
  const callable = [
    ...tools.map(callName),
    ...tools.map((t) => {
      const n = names.tools.get(t.qualified)!;
      return `${n.group}.${n.member}`;
    }),
    ...nsFns.flatMap(([ns, fns]) => fns.map((fn) => `${names.groups.get(ns)!}.${fn}`)),
  ];
  return { plain, groups, byName, callName, callable: [...new Set(callable)] };
}

/** What a call's callee refers to. */
type Target =
  | { kind: "tool"; tool: ToolInfo; args: CallExpression["arguments"] }
  | { kind: "host" }
  | { kind: "unknown_member"; group: string; member: string; node: AnyNode };

function resolveCall(call: CallExpression, declared: Set<string>, index: ToolIndex): Target | undefined {
  const callee = call.callee;
  if (callee.type === "Identifier" && !declared.has(callee.name)) {
    if (callee.name === "callTool") {
      // callTool("server.tool" | "name", ...args): the name is checked like any other when it is a literal.
      const first = call.arguments[0];
      if (first?.type !== "Literal" || typeof first.value !== "string") return undefined;
      const name = first.value;
      const tool = index.byName.get(name);
      if (tool) return { kind: "tool", tool, args: call.arguments.slice(1) };
      return { kind: "unknown_member", group: "callTool", member: name, node: first };
    }
    const tool = index.plain.get(callee.name)?.find((t) => t.unique);
    return tool ? { kind: "tool", tool, args: call.arguments } : undefined;
  }
  if (callee.type === "MemberExpression" && callee.object.type === "Identifier") {
    const groupName = callee.object.name;
    const group = index.groups.get(groupName);
    const member = staticProperty(callee);
    if (!group || declared.has(groupName) || member === undefined) return undefined;
    if (!group.has(member)) return { kind: "unknown_member", group: groupName, member, node: callee };
    const tool = group.get(member);
    return tool ? { kind: "tool", tool, args: call.arguments } : { kind: "host" };
  }
  return undefined;
}

interface Analysis {
  declared: Set<string>;
  /** Identifiers read as values (not declarations, property keys or labels), in source order. */
  refs: { node: AnyNode & { name: string }; parent: AnyNode | undefined }[];
  calls: CallExpression[];
  imports: AnyNode[];
  constructorCalls: AnyNode[];
  topLevelReturn: boolean;
}

function analyse(program: Program): Analysis {
  const a: Analysis = {
    declared: new Set(),
    refs: [],
    calls: [],
    imports: [],
    constructorCalls: [],
    topLevelReturn: false,
  };
  const isFunction = (n: AnyNode) =>
    n.type === "FunctionDeclaration" ||
    n.type === "FunctionExpression" ||
    n.type === "ArrowFunctionExpression";
  // acorn-walk calls "VariablePattern" for every identifier that is bound (declarations, parameters, catch
  // clauses, assignment targets) and "Identifier" only for identifiers read as values.
  const visitors = {
    VariablePattern(node: AnyNode) {
      if (node.type === "Identifier") a.declared.add(node.name);
    },
    Identifier(node: AnyNode, _state: unknown, ancestors: AnyNode[]) {
      if (node.type === "Identifier") a.refs.push({ node, parent: ancestors[ancestors.length - 2] });
    },
    CallExpression(node: AnyNode) {
      if (node.type !== "CallExpression") return;
      a.calls.push(node);
      if (isConstructorAccess(node.callee)) a.constructorCalls.push(node);
    },
    NewExpression(node: AnyNode) {
      if (node.type === "NewExpression" && isConstructorAccess(node.callee)) a.constructorCalls.push(node);
    },
    ImportExpression(node: AnyNode) {
      a.imports.push(node);
    },
    ReturnStatement(_node: AnyNode, _state: unknown, ancestors: AnyNode[]) {
      if (!ancestors.some(isFunction)) a.topLevelReturn = true;
    },
  };
  ancestor(program, visitors as Parameters<typeof ancestor>[1]);
  return a;
}

/** `x.constructor` or `x["constructor"]`: the classic way to reach Function without naming it. */
function isConstructorAccess(callee: Expression | AnyNode): boolean {
  if (callee.type !== "MemberExpression") return false;
  const p = callee.property;
  return (
    (!callee.computed && p.type === "Identifier" && p.name === "constructor") ||
    (p.type === "Literal" && p.value === "constructor")
  );
}

/** The property name of `a.b` or `a["b"]`, when it is static. */
function staticProperty(callee: AnyNode): string | undefined {
  if (callee.type !== "MemberExpression") return undefined;
  const p = callee.property;
  if (!callee.computed && p.type === "Identifier") return p.name;
  if (p.type === "Literal" && typeof p.value === "string") return p.value;
  return undefined;
}

function parseProgram(code: string): { program: Program } | { finding: Finding } {
  if (/^\s*```/.test(code)) {
    return {
      finding: {
        rule: "code.parse_error",
        severity: "block",
        message: "The code is wrapped in a Markdown fence (```); send only the JavaScript.",
        line: 1,
        column: 1,
      },
    };
  }
  try {
    return { program: parse(code, PARSE_OPTIONS) };
  } catch (e) {
    const err = e as SyntaxError & { loc?: { line: number; column: number }; pos?: number };
    const line = err.loc?.line ?? 1;
    const column = (err.loc?.column ?? 0) + 1;
    let reason = err.message.replace(/\s*\(\d+:\d+\)$/, "");
    if (/'import' and 'export' may appear only/.test(reason)) {
      reason = "import/export statements are not available: every tool is already a global async function";
    }
    const source = code.split(/\r\n|\r|\n/)[line - 1] ?? "";
    const frame = `\n  ${line} | ${source}\n  ${" ".repeat(String(line).length)} | ${" ".repeat(column - 1)}^`;
    const finding: Finding = {
      rule: "code.parse_error",
      severity: "block",
      message: `Syntax error at line ${line}, column ${column}: ${reason}.${frame}`,
      line,
      column,
    };
    if (err.pos !== undefined) finding.span = { start: err.pos, end: Math.min(code.length, err.pos + 1) };
    return { finding };
  }
}

/** The candidates nearest to `name` by edit distance (or containing it), best first. */
function nearest(name: string, candidates: readonly string[], max: number): string[] {
  const lower = name.toLowerCase();
  return [...new Set(candidates)]
    .map((c) => {
      const tail = c.includes(".") ? c.slice(c.indexOf(".") + 1) : c;
      const d = Math.min(distance(lower, c.toLowerCase()), distance(lower, tail.toLowerCase()));
      const contains =
        tail.length >= 3 && (lower.includes(tail.toLowerCase()) || tail.toLowerCase().includes(lower));
      return { c, d: contains ? Math.min(d, 1.5) : d };
    })
    .filter((x) => x.d <= Math.max(2, Math.ceil(name.length * 0.4)))
    .sort((x, y) => x.d - y.d || x.c.length - y.c.length)
    .slice(0, max)
    .map((x) => x.c);
}

function at(node: Node): Pick<Finding, "line" | "column" | "span"> {
  return {
    line: node.loc?.start.line ?? 1,
    column: (node.loc?.start.column ?? 0) + 1,
    span: { start: node.start, end: node.end },
  };
}

function orList(names: readonly string[]): string {
  if (names.length <= 1) return names.join("");
  return `${names.slice(0, -1).join(", ")} or ${names[names.length - 1]}`;
}

/**
 * Checks generated code against the tools it may call. `tools` is the hub's list (core ToolInfo); a plain name
 * is callable only when `unique`, `server.tool` always (DESIGN.md, "CODE steps").
 */
export function guardCode(
  code: string,
  tools: readonly ToolInfo[],
  options: CodeGuardOptions = {},
): CodeGuardResult {
  const parsed = parseProgram(code);
  if ("finding" in parsed) return { ok: false, findings: [parsed.finding] };
  const index = indexTools(tools, options.namespaces);
  const a = analyse(parsed.program);
  const max = options.maxSuggestions ?? 3;
  const allowed = new Set(options.allow ?? []);
  const known =
    options.helpers || allowed.size || options.extraGlobals?.length
      ? new Set([
          ...JS_BUILTINS,
          ...(options.helpers ?? SANDBOX_HELPERS),
          ...allowed,
          ...(options.extraGlobals ?? []),
        ])
      : DEFAULT_KNOWN;
  const findings: Finding[] = [];
  const reported = new Set<string>();
  const toolList = () => {
    const names = tools.map(index.callName);
    return names.length <= 12
      ? names.join(", ")
      : `${names.slice(0, 12).join(", ")}, … (${names.length} in all)`;
  };

  // Free names: forbidden globals, unknown tools, undefined variables, ambiguous plain names. A tool or server
  // bound under a name wins over everything else, as it does in the sandbox.
  for (const { node, parent } of a.refs) {
    const name = node.name;
    if (a.declared.has(name) || reported.has(name)) continue;
    const sameName = index.plain.get(name);
    if (index.groups.has(name) || sameName?.some((t) => t.unique)) continue;
    const isCallee = parent?.type === "CallExpression" && parent.callee === node;
    const forbidden = FORBIDDEN_GLOBALS[name];
    if (forbidden && !allowed.has(name)) {
      reported.add(name);
      const fetchers = name === "fetch" || name === "XMLHttpRequest" ? fetchLikeTools(tools, index) : [];
      findings.push({
        rule: "code.forbidden",
        severity: "block",
        message:
          `\`${name}\` is not available: ${forbidden}` +
          (fetchers.length ? ` Tools that fetch: ${fetchers.join(", ")}.` : ""),
        ...at(node),
        ...(fetchers.length ? { suggestions: fetchers } : {}),
      });
      continue;
    }
    if (known.has(name)) continue;
    if (parent?.type === "UnaryExpression" && parent.operator === "typeof") continue;
    reported.add(name);
    if (sameName) {
      const qualified = sameName.map(index.callName);
      findings.push({
        rule: "code.ambiguous_tool",
        severity: "block",
        message: `\`${name}\` is a tool on several servers; call it as ${orList(qualified)}.`,
        ...at(node),
        suggestions: qualified,
      });
      continue;
    }
    const suggestions = isCallee
      ? nearest(name, index.callable, max)
      : nearest(name, [...a.declared, ...index.callable], max);
    const hint = suggestions.length
      ? ` Did you mean ${orList(suggestions)}?`
      : isCallee
        ? ` Available tools: ${toolList()}.`
        : "";
    findings.push({
      rule: isCallee ? "code.unknown_tool" : "code.undefined_name",
      severity: "block",
      message: isCallee
        ? `\`${name}()\` is not a tool or function available here.${hint}`
        : `\`${name}\` is not defined.${hint}`,
      ...at(node),
      ...(suggestions.length ? { suggestions } : {}),
    });
  }

  for (const node of a.imports) {
    findings.push({
      rule: "code.forbidden",
      severity: "block",
      message: "import() is not available: every tool is already a global async function.",
      ...at(node),
    });
  }
  for (const node of a.constructorCalls) {
    findings.push({
      rule: "code.forbidden",
      severity: "block",
      message:
        "Calling `.constructor` reaches the Function constructor, which is not allowed; write the code directly.",
      ...at(node),
    });
  }

  // Tool calls: `server.tool(...)` must name a member of that server; arguments must fit the input schema.
  for (const call of a.calls) {
    const target = resolveCall(call, a.declared, index);
    if (target?.kind === "tool")
      findings.push(...checkArguments(target.tool, index.callName(target.tool), target.args, call, max));
    if (target?.kind !== "unknown_member") continue;
    const { group, member, node } = target;
    if (group === "callTool") {
      const suggestions = nearest(member, index.callable, max);
      findings.push({
        rule: "code.unknown_tool",
        severity: "block",
        message:
          `callTool("${member}") names no tool.` +
          (suggestions.length ? ` Did you mean ${orList(suggestions)}?` : ` Available tools: ${toolList()}.`),
        ...at(node),
        ...(suggestions.length ? { suggestions } : {}),
      });
      continue;
    }
    const members = [...(index.groups.get(group)?.keys() ?? [])].filter((m) => isJsIdentifier(m));
    const suggestions = nearest(
      member,
      members.map((m) => `${group}.${m}`),
      max,
    );
    findings.push({
      rule: "code.unknown_tool",
      severity: "block",
      message:
        `\`${group}.${member}()\` is not a tool: "${group}" has ` +
        (suggestions.length
          ? `no "${member}". Did you mean ${orList(suggestions)}?`
          : `only ${members.join(", ")}.`),
      ...at(node),
      ...(suggestions.length ? { suggestions } : {}),
    });
  }

  if (!a.topLevelReturn) {
    findings.push({
      rule: "code.no_return",
      severity: "warn",
      message: "The code never returns a value at top level; the step's result is what you `return`.",
    });
  }
  findings.sort((x, y) => (x.span?.start ?? Infinity) - (y.span?.start ?? Infinity));
  return { ok: !findings.some((f) => f.severity === "block"), findings };
}

function fetchLikeTools(tools: readonly ToolInfo[], index: ToolIndex): string[] {
  return tools
    .filter((t) => /fetch|url|http|web|download|browse/i.test(t.name))
    .map(index.callName)
    .slice(0, 3);
}

interface ParamSpec {
  names: string[];
  required: string[];
  closed: boolean;
  objectTyped: Set<string>;
}

function paramsOf(tool: ToolInfo): ParamSpec | undefined {
  const schema = tool.inputSchema;
  const props = schema.properties;
  if (typeof props !== "object" || props === null) return undefined;
  const entries = Object.entries(props as Record<string, unknown>);
  const required = Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === "string") : [];
  const objectTyped = new Set(
    entries
      .filter(([, v]) => {
        const p = (v ?? {}) as { type?: unknown; properties?: unknown };
        return p.type === "object" || (p.type === undefined && typeof p.properties === "object");
      })
      .map(([k]) => k),
  );
  return {
    names: entries.map(([k]) => k),
    required,
    closed: schema.additionalProperties === false,
    objectTyped,
  };
}

/** Named form `t({a: 1})` or positional `t(1, 2)` (DESIGN.md), checked against the tool's input schema. */
function checkArguments(
  tool: ToolInfo,
  label: string,
  args: CallExpression["arguments"],
  call: CallExpression,
  max: number,
): Finding[] {
  const spec = paramsOf(tool);
  if (!spec) return [];
  const signature = `${label}(${spec.names.map((n) => (spec.required.includes(n) ? n : `${n}?`)).join(", ")})`;
  if (args.some((x) => x.type === "SpreadElement")) return [];
  const first = args[0];
  const findings: Finding[] = [];
  // The sandbox's rule (action/args.ts): one plain object is the named arguments, unless the tool's only
  // parameter is object-typed and the object has a key other than that parameter's name.
  const onlyParam = spec.names.length === 1 ? spec.names[0] : undefined;
  const onlyIsObject = onlyParam !== undefined && spec.objectTyped.has(onlyParam);
  const named =
    args.length === 1 &&
    first?.type === "ObjectExpression" &&
    !(onlyIsObject && !first.properties.every((p) => p.type === "Property" && keyName(p) === onlyParam));

  if (named && first?.type === "ObjectExpression") {
    const keys: string[] = [];
    let open = false; // a spread or computed key could supply anything
    for (const p of first.properties) {
      const k = p.type === "Property" ? keyName(p) : undefined;
      if (k === undefined) open = true;
      else keys.push(k);
    }
    for (const k of keys) {
      if (spec.names.includes(k)) continue;
      const suggestions = nearest(k, spec.names, max);
      findings.push({
        rule: "code.tool_args",
        severity: spec.closed ? "block" : "warn",
        message:
          `${label}() has no parameter "${k}"` +
          (suggestions.length ? `; did you mean "${suggestions[0]}"?` : ".") +
          ` Its parameters: ${signature}.`,
        ...at(call),
        ...(suggestions.length ? { suggestions } : {}),
      });
    }
    const missing = open ? [] : spec.required.filter((r) => !keys.includes(r));
    if (missing.length) {
      findings.push({
        rule: "code.tool_args",
        severity: "block",
        message: `${label}() is missing the required ${missing.length > 1 ? "parameters" : "parameter"} ${missing.map((m) => `"${m}"`).join(", ")}. Call it as ${signature}.`,
        ...at(call),
      });
    }
    return findings;
  }

  if (args.length > spec.names.length) {
    findings.push({
      rule: "code.tool_args",
      severity: "block",
      message: `${label}() takes ${spec.names.length === 0 ? "no arguments" : `at most ${spec.names.length} argument${spec.names.length > 1 ? "s" : ""}`} but is given ${args.length}. Call it as ${signature}, or with one object of named arguments.`,
      ...at(call),
    });
  }
  const missing = spec.required.filter((r) => spec.names.indexOf(r) >= args.length);
  if (missing.length) {
    findings.push({
      rule: "code.tool_args",
      severity: "block",
      message: `${label}() is missing the required ${missing.length > 1 ? "arguments" : "argument"} ${missing.map((m) => `"${m}"`).join(", ")}. Call it as ${signature}.`,
      ...at(call),
    });
  }
  return findings;
}

function keyName(p: { key: AnyNode | Expression; computed: boolean }): string | undefined {
  if (!p.computed && p.key.type === "Identifier") return p.key.name;
  if (p.key.type === "Literal" && (typeof p.key.value === "string" || typeof p.key.value === "number")) {
    return String(p.key.value);
  }
  return undefined;
}

/**
 * The qualified names of the tools the code calls (plain unique names resolved), in first-call order; empty
 * when the code does not parse. For "tools the plan already uses" in tool selection.
 */
export function findToolCalls(code: string, tools: readonly ToolInfo[]): string[] {
  const parsed = parseProgram(code);
  if ("finding" in parsed) return [];
  const index = indexTools(tools);
  const a = analyse(parsed.program);
  const out = new Set<string>();
  for (const call of a.calls) {
    const target = resolveCall(call, a.declared, index);
    if (target?.kind === "tool") out.add(target.tool.qualified);
  }
  return [...out];
}
