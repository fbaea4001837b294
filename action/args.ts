/**
 * The calling convention of a tool function in the sandbox: arguments as sent by the code → the named JSON
 * arguments the tool receives, validated against the tool's input schema with defaults filled in.
 *
 * - One plain object → named arguments: `add({a: 1, b: 2})`. Exception: a tool whose only parameter is itself
 *   an object takes such an argument as that parameter's value, unless every key names a parameter.
 * - Anything else → positional, in the order the input schema lists its properties (`add(1, 2)`);
 *   `toolSignature` (core/tool-signature.ts) shows that order. `undefined` in a position means "not given" (the default applies).
 * - Values become JSON explicitly: Date → ISO string, Uint8Array/ArrayBuffer → base64 string, bigint → number
 *   when it is a safe integer; NaN, Infinity, a larger bigint, undefined inside a value, functions, symbols,
 *   Map and Set are refused with an error naming the field.
 */
import {
  ToolError,
  parameterNames,
  toolProperties,
  toolSignature,
  validateArgs,
  type ToolInfo,
} from "../core/index.js";
import { Opaque } from "./codec.js";

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function fieldName(path: string): string {
  return path === "" ? "(arguments)" : path;
}

/** A decoded sandbox value → JSON for a tool, or a ToolError naming the field. */
function toJson(value: unknown, path: string, tool: string): unknown {
  const fail = (why: string): never => {
    throw new ToolError("TOOL_INVALID_ARGS", tool, `${tool}: argument "${fieldName(path)}" ${why}`);
  };
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) ? value : fail(`is ${value}, which is not a JSON number`);
    case "bigint":
      return Number.isSafeInteger(Number(value))
        ? Number(value)
        : fail(`is the bigint ${value}, too large for a JSON number; pass it as a string`);
    case "undefined":
      return fail("is undefined; leave it out or pass null");
    case "function":
    case "symbol":
      return fail(`is a ${typeof value}, which cannot be sent to a tool`);
  }
  if (value === null) return null;
  if (value instanceof Date) {
    return Number.isNaN(value.getTime()) ? fail("is an invalid Date") : value.toISOString();
  }
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) {
    const buf =
      value instanceof ArrayBuffer
        ? Buffer.from(value)
        : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    return buf.toString("base64");
  }
  if (Array.isArray(value)) return value.map((v, i) => toJson(v, `${path}[${i}]`, tool));
  if (value instanceof Map || value instanceof Set) {
    return fail(`is a ${value instanceof Map ? "Map" : "Set"}; pass a plain object or an array`);
  }
  if (value instanceof Opaque) return fail(`is a ${value.tag.$pda}, which cannot be sent to a tool`);
  if (!isPlainObject(value)) return fail("is an object of a class, which cannot be sent to a tool");
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined) continue; // an absent optional field, as JSON.stringify would have it
    Object.defineProperty(out, k, {
      value: toJson(v, path ? `${path}.${k}` : k, tool),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** True when the single object argument is that one object-typed parameter's value, not named arguments. */
function isWholeValueOfOnlyParam(tool: ToolInfo, arg: Record<string, unknown>): boolean {
  const props = toolProperties(tool);
  const names = Object.keys(props);
  if (names.length !== 1) return false;
  const only = props[names[0]!]!;
  const objectTyped =
    only.type === "object" || (only.type === undefined && typeof only.properties === "object");
  return objectTyped && !Object.keys(arg).every((k) => k === names[0]);
}

/**
 * The arguments of one call (decoded sandbox values) → validated named JSON arguments with defaults, or a
 * ToolError TOOL_INVALID_ARGS whose message names the field and shows the signature. `plainJson`: the
 * arguments came as JSON without any tag, so they are JSON already and need no conversion. `callName`: how
 * the code calls the tool (core/tool-names.ts), for the signature in messages.
 */
export function toolArguments(
  tool: ToolInfo,
  args: unknown[],
  plainJson = false,
  callName: string = tool.qualified,
): Record<string, unknown> {
  const name = tool.qualified;
  const names = parameterNames(tool);
  const convert = (v: unknown, path: string) => (plainJson ? v : toJson(v, path, name));
  let named: Record<string, unknown>;
  const first = args[0];
  if (args.length === 1 && isPlainObject(first) && !isWholeValueOfOnlyParam(tool, first)) {
    named = convert(first, "") as Record<string, unknown>;
  } else {
    if (args.length > names.length) {
      throw new ToolError(
        "TOOL_INVALID_ARGS",
        name,
        `${name}: takes ${names.length} argument${names.length === 1 ? "" : "s"}, got ${args.length}; call it as ${toolSignature(tool, callName)} or with one object of named arguments`,
      );
    }
    named = {};
    args.forEach((v, i) => {
      const key = names[i]!;
      if (v === undefined) return;
      // defineProperty: a schema may name a parameter "__proto__"; it must stay a plain own key.
      Object.defineProperty(named, key, {
        value: convert(v, key),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    });
  }
  if (!tool.inputSchema) return named;
  // `named` is this call's own object: defaults go straight into it.
  return validateArgs(name, tool.inputSchema, named, {
    inPlace: true,
    hint: ` (signature: ${toolSignature(tool, callName)})`,
  });
}
