/**
 * Checks tool arguments against the tool's JSON Schema, with messages that name the field: the one check the
 * sandbox (before a call leaves it) and the hub (before a call is sent) share. Ajv is the validator the MCP
 * SDK itself depends on; compiled validators are cached per schema object. Defaults in the schema are filled
 * in (`useDefaults`), as DESIGN.md's calling convention promises. Most tools' schemas are a flat object of
 * scalars (the math server's: `{a: number, b: number}`): arguments that such a schema plainly accepts pass
 * without Ajv, which is loaded and compiled only to judge (and word the errors of) the others (#16).
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import type { Ajv, ErrorObject, ValidateFunction } from "ajv";
import type { Ajv2020 } from "ajv/dist/2020.js";
import { ToolError } from "./errors.js";
import { distPath } from "./paths.js";

const options = { strict: false, allErrors: true, useDefaults: true, validateSchema: false } as const;
/** Ajv packed into one file by the build (cli/bundle.ts), relative to dist/. */
export const AJV_BUNDLE = "core/ajv.cjs";
// Loaded on the first check, not at import: core/ is imported by every command, and most check no tool call.
const require = createRequire(import.meta.url);
interface AjvClasses {
  Ajv: typeof import("ajv").Ajv;
  Ajv2020: typeof import("ajv/dist/2020.js").Ajv2020;
}
let classes: AjvClasses | undefined;
/** The build's one-file Ajv (a third of the CPU of requiring its ~85 files); the package's own without one. */
function ajvClasses(): AjvClasses {
  if (!classes) {
    const bundled = distPath(AJV_BUNDLE);
    classes = existsSync(bundled)
      ? (require(bundled) as AjvClasses)
      : {
          Ajv: (require("ajv") as typeof import("ajv")).Ajv,
          Ajv2020: (require("ajv/dist/2020.js") as typeof import("ajv/dist/2020.js")).Ajv2020,
        };
  }
  return classes;
}
let draft7: Ajv | undefined;
// Servers built with newer zod emit 2020-12 schemas; ajv needs a separate instance for that draft.
let draft2020: Ajv2020 | undefined;
/** The validator for a schema's draft, created on first need. */
function validator(schema: Record<string, unknown>): Ajv | Ajv2020 {
  if (String(schema.$schema ?? "").includes("2020-12")) {
    return (draft2020 ??= new (ajvClasses().Ajv2020)(options));
  }
  return (draft7 ??= new (ajvClasses().Ajv)(options));
}
interface Compiled {
  /** Ajv's validator, compiled on first need; null when Ajv cannot compile the schema. */
  fn?: ValidateFunction | null;
  /** Whether validating can write defaults into the arguments (then they are copied first). */
  fillsDefaults: boolean;
  /** For a flat schema of scalars: true when Ajv would accept the arguments as they are (else ask Ajv). */
  accepts: ((args: Record<string, unknown>) => boolean) | null;
}
const cache = new WeakMap<object, Compiled>();

function entryOf(schema: Record<string, unknown>): Compiled {
  let entry = cache.get(schema);
  if (entry === undefined) {
    const fillsDefaults = JSON.stringify(schema).includes('"default"');
    entry = { fillsDefaults, accepts: fillsDefaults ? null : plainCheck(schema) };
    cache.set(schema, entry);
  }
  return entry;
}

function compiled(schema: Record<string, unknown>, entry: Compiled): ValidateFunction | null {
  if (entry.fn === undefined) {
    const ajv = validator(schema);
    try {
      entry.fn = ajv.compile(schema);
    } catch {
      // A schema ajv cannot compile (unknown draft, bad $ref): let the server be the judge.
      entry.fn = null;
    }
  }
  return entry.fn;
}

/** Keywords that do not constrain a value. */
const ANNOTATIONS = new Set(["description", "title", "examples", "$comment"]);
/** What Ajv accepts for each type, or less (a non-finite number, say, is left to Ajv). */
const SCALARS: Readonly<Record<string, (v: unknown) => boolean>> = {
  string: (v) => typeof v === "string",
  boolean: (v) => typeof v === "boolean",
  null: (v) => v === null,
  number: (v) => typeof v === "number" && Number.isFinite(v),
  integer: (v) => Number.isInteger(v),
};
const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * For a schema Ajv would read the same way under either draft, that only says `type: object`, `properties` of
 * one scalar `type` each, `required` and a boolean `additionalProperties` (annotations aside): a test that
 * passes only arguments Ajv accepts. Any other schema: null (Ajv judges every call).
 */
function plainCheck(schema: Record<string, unknown>): Compiled["accepts"] {
  const draft = String(schema.$schema ?? "");
  if (draft && !draft.includes("draft-07") && !draft.includes("2020-12")) return null;
  if (schema.type !== "object") return null;
  let props: Record<string, unknown> = {};
  let required: string[] = [];
  let closed = false;
  for (const [k, v] of Object.entries(schema)) {
    if (k === "type" || k === "$schema" || ANNOTATIONS.has(k)) continue;
    if (k === "properties" && isRecord(v)) props = v;
    else if (k === "required" && Array.isArray(v) && v.every((r) => typeof r === "string")) required = v;
    else if (k === "additionalProperties" && typeof v === "boolean") closed = !v;
    else return null;
  }
  const tests: Array<[string, (v: unknown) => boolean]> = [];
  for (const [name, p] of Object.entries(props)) {
    if (!isRecord(p) || typeof p.type !== "string" || !Object.hasOwn(SCALARS, p.type)) return null;
    for (const k of Object.keys(p)) if (k !== "type" && !ANNOTATIONS.has(k)) return null;
    tests.push([name, SCALARS[p.type]!]);
  }
  const known = new Set(Object.keys(props));
  return (args) => {
    if (!isRecord(args)) return false;
    for (const r of required) if (args[r] === undefined) return false;
    for (const [name, test] of tests) {
      const v = args[name];
      if (v !== undefined && !test(v)) return false;
    }
    if (closed) for (const k in args) if (!known.has(k)) return false;
    return true;
  };
}

function describe(e: ErrorObject): string {
  const path = e.instancePath
    .split("/")
    .slice(1)
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
    .join(".");
  if (e.keyword === "required") {
    const missing = (e.params as { missingProperty: string }).missingProperty;
    return `missing required argument "${path ? `${path}.` : ""}${missing}"`;
  }
  if (e.keyword === "additionalProperties") {
    const extra = (e.params as { additionalProperty: string }).additionalProperty;
    return `unknown argument "${path ? `${path}.` : ""}${extra}"`;
  }
  if (e.keyword === "enum") {
    const allowed = (e.params as { allowedValues?: unknown[] }).allowedValues ?? [];
    return `argument "${path || "(arguments)"}" must be one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}`;
  }
  return `argument "${path || "(arguments)"}" ${e.message ?? "is invalid"}`;
}

export interface CheckArgsOptions {
  /** The arguments are the caller's own fresh object: defaults may be written into it (no copy). */
  inPlace?: boolean;
  /** Appended to the error message, e.g. " (signature: add(a: number, b: number))". */
  hint?: string;
}

/**
 * The arguments to send: `args` (or a copy of it, unless inPlace) with schema defaults filled in. Throws
 * TOOL_INVALID_ARGS naming every bad field.
 */
export function validateArgs(
  tool: string,
  schema: Record<string, unknown>,
  args: Record<string, unknown>,
  options: CheckArgsOptions = {},
): Record<string, unknown> {
  const entry = entryOf(schema);
  if (entry.accepts?.(args)) return args;
  const fn = compiled(schema, entry);
  if (!fn) return args;
  const { fillsDefaults } = entry;
  // Defaults are written into the object; the caller's must stay as it was.
  let copy = args;
  if (fillsDefaults && !options.inPlace) {
    try {
      copy = structuredClone(args);
    } catch {
      throw new ToolError("TOOL_INVALID_ARGS", tool, `${tool}: arguments must be plain JSON values`);
    }
  }
  if (fn(copy)) return copy;
  const errors = (fn.errors ?? []).map(describe);
  const unique = [...new Set(errors)];
  throw new ToolError("TOOL_INVALID_ARGS", tool, `${tool}: ${unique.join("; ")}${options.hint ?? ""}`);
}
