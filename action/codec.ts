/**
 * How values cross the sandbox boundary: always as a JSON string, with the values JSON cannot carry made
 * explicit as tagged objects `{"$pda": kind, ...}` rather than silently dropped or changed:
 *
 *   undefined            {"$pda":"undefined"}
 *   NaN, ±Infinity       {"$pda":"number","value":"NaN" | "Infinity" | "-Infinity"}
 *   bigint               {"$pda":"bigint","value":"12345678901234567890"}
 *   Date                 {"$pda":"date","value":"2024-01-02T03:04:05.000Z"}   (invalid date: value null)
 *   Uint8Array, other typed arrays, ArrayBuffer, DataView
 *                        {"$pda":"bytes","base64":"AQID"}   (+ "type":"Float32Array" etc. when not Uint8Array)
 *   Map / Set            {"$pda":"map","entries":[[k, v], ...]}  /  {"$pda":"set","values":[...]}
 *   Error                {"$pda":"error","name":"TypeError","message":"..."}  (+ code, tool for ToolError)
 *   RegExp               {"$pda":"regexp","source":"a+","flags":"g"}
 *   function, symbol     {"$pda":"function","name":"f"}, {"$pda":"symbol","description":"s"}
 *
 * On the host, a function, symbol or RegExp from the sandbox decodes to an `Opaque` holding its tag.
 *
 * A plain object's own key made only of `$`s followed by `pda` gets one more `$` (so `{"$pda": 1}` travels
 * as `{"$$pda": 1}`): an object with a `$pda` key is always a tag. Cycles are an error. The sandbox side of
 * this codec is in prelude.ts and must stay in step with this file; codec.test.ts round-trips both.
 */
import { z } from "zod";

export const TAG = "$pda";
const ESCAPED_KEY = /^\$+pda$/;

export type Tagged = { [TAG]: string; [k: string]: unknown };

function isTagged(v: unknown): v is Tagged {
  return (
    typeof v === "object" &&
    v !== null &&
    !Array.isArray(v) &&
    typeof (v as Record<string, unknown>)[TAG] === "string"
  );
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  // defineProperty, not assignment: a key "__proto__" stays an own data property and never sets a prototype.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function bytesOf(v: ArrayBuffer | ArrayBufferView): Buffer {
  return v instanceof ArrayBuffer ? Buffer.from(v) : Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

/** The tagged JSON form of one host value (a replacer for JSON.stringify). */
function encodeReplacer(this: unknown, key: string, value: unknown): unknown {
  const raw = (this as Record<string, unknown>)[key];
  switch (typeof raw) {
    case "undefined":
      return { [TAG]: "undefined" };
    case "number":
      return Number.isFinite(raw) ? raw : { [TAG]: "number", value: String(raw) };
    case "bigint":
      return { [TAG]: "bigint", value: raw.toString() };
    case "function":
      return { [TAG]: "function", name: raw.name };
    case "symbol":
      return { [TAG]: "symbol", description: raw.description ?? "" };
    case "object": {
      if (raw === null) return null;
      if (raw instanceof Opaque) return raw.tag;
      if (raw instanceof Date) {
        return { [TAG]: "date", value: Number.isNaN(raw.getTime()) ? null : raw.toISOString() };
      }
      if (raw instanceof ArrayBuffer || ArrayBuffer.isView(raw)) {
        const type = raw.constructor?.name;
        const tag: Tagged = { [TAG]: "bytes", base64: bytesOf(raw).toString("base64") };
        if (type && type !== "Uint8Array" && type !== "Buffer") tag.type = type;
        return tag;
      }
      if (raw instanceof Map) return { [TAG]: "map", entries: [...raw.entries()] };
      if (raw instanceof Set) return { [TAG]: "set", values: [...raw.values()] };
      if (raw instanceof RegExp) return { [TAG]: "regexp", source: raw.source, flags: raw.flags };
      if (raw instanceof Error) {
        const tag: Tagged = { [TAG]: "error", name: raw.name, message: raw.message };
        const extra = raw as Error & { code?: unknown; tool?: unknown };
        if (typeof extra.code === "string") tag.code = extra.code;
        if (typeof extra.tool === "string") tag.tool = extra.tool;
        return tag;
      }
      if (Array.isArray(value) || typeof value !== "object" || value === null) return value;
      let escaped: Record<string, unknown> | undefined;
      for (const k of Object.keys(value)) {
        if (ESCAPED_KEY.test(k)) {
          escaped ??= {};
          break;
        }
      }
      if (!escaped) return value;
      for (const [k, v] of Object.entries(value)) setOwn(escaped, ESCAPED_KEY.test(k) ? `$${k}` : k, v);
      return escaped;
    }
    default:
      return value;
  }
}

/** Host value → tagged JSON text. Throws TypeError on a cycle. */
export function encode(value: unknown): string {
  // Most tool results are a bare number or string: no replacer needed.
  if (
    typeof value === "string" ||
    typeof value === "boolean" ||
    (typeof value === "number" && Number.isFinite(value))
  ) {
    return JSON.stringify(value);
  }
  return JSON.stringify(value, encodeReplacer);
}

function base64Bytes(b64: string): Uint8Array {
  const buf = Buffer.from(b64, "base64");
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

const TYPED: Record<string, new (buffer: ArrayBuffer, offset: number, length: number) => ArrayBufferView> = {
  Int8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
};

/**
 * A sandbox value with no host equivalent — a function, a symbol, a RegExp — kept as its tag: never callable,
 * never compiled, refused as a tool argument, and encoded back as the same tag.
 */
export class Opaque {
  constructor(readonly tag: Tagged) {}
}

const TYPED_NAMES = Object.keys(TYPED) as [string, ...string[]];

/**
 * The tags the decoder accepts, field by field. Tags come from the sandbox, whose code can build any JSON
 * (a `toJSON`, a getter that changes between check and use): nothing but these shapes reaches untag, and the
 * sizes that cost the host more than linear work (BigInt parsing) are capped.
 */
const TagSchema = z.discriminatedUnion(TAG, [
  z.object({ [TAG]: z.literal("undefined") }).strict(),
  z.object({ [TAG]: z.literal("number"), value: z.enum(["NaN", "Infinity", "-Infinity"]) }).strict(),
  z.object({ [TAG]: z.literal("bigint"), value: z.string().regex(/^-?\d{1,4096}$/) }).strict(),
  z.object({ [TAG]: z.literal("date"), value: z.string().max(64).nullable() }).strict(),
  z
    .object({
      [TAG]: z.literal("bytes"),
      base64: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/),
      type: z.enum([...TYPED_NAMES, "ArrayBuffer", "DataView"]).optional(),
    })
    .strict(),
  z.object({ [TAG]: z.literal("map"), entries: z.array(z.tuple([z.unknown(), z.unknown()])) }).strict(),
  z.object({ [TAG]: z.literal("set"), values: z.array(z.unknown()) }).strict(),
  z.object({ [TAG]: z.literal("regexp"), source: z.string(), flags: z.string() }).strict(),
  z
    .object({
      [TAG]: z.literal("error"),
      name: z.string(),
      message: z.string(),
      code: z.string().optional(),
      tool: z.string().optional(),
    })
    .strict(),
  z.object({ [TAG]: z.literal("function"), name: z.string() }).strict(),
  z.object({ [TAG]: z.literal("symbol"), description: z.string() }).strict(),
]);

/** One tag → its host value (functions, symbols and RegExps become Opaque). Throws TypeError on a bad tag. */
export function untag(raw: Tagged): unknown {
  const parsed = TagSchema.safeParse(raw);
  if (!parsed.success) {
    const kind = String(raw[TAG]).slice(0, 40);
    throw new TypeError(`a malformed value tag "${kind}": ${parsed.error.issues[0]?.message ?? "invalid"}`);
  }
  const tag = parsed.data;
  switch (tag[TAG]) {
    case "undefined":
      return undefined;
    case "number":
      return Number(tag.value);
    case "bigint":
      return BigInt(tag.value);
    case "date":
      return new Date(tag.value === null ? Number.NaN : tag.value);
    case "bytes": {
      const bytes = base64Bytes(tag.base64);
      if (tag.type === "ArrayBuffer") return bytes.slice().buffer;
      const Ctor = tag.type && Object.hasOwn(TYPED, tag.type) ? TYPED[tag.type] : undefined;
      if (!Ctor) return bytes;
      const copy = bytes.slice().buffer;
      const width = (Ctor as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT;
      return new Ctor(copy, 0, Math.floor(copy.byteLength / width));
    }
    case "map":
      return new Map(tag.entries);
    case "set":
      return new Set(tag.values);
    case "error": {
      const e = new Error(tag.message);
      e.name = tag.name;
      if (tag.code !== undefined) (e as Error & { code?: string }).code = tag.code;
      if (tag.tool !== undefined) (e as Error & { tool?: string }).tool = tag.tool;
      return e;
    }
    default:
      return new Opaque(raw);
  }
}

/**
 * Replace tags inside a freshly parsed JSON tree, children first. Not a JSON.parse reviver: a reviver that
 * returns undefined deletes the key, and `{"x": {"$pda": "undefined"}}` must keep `x`.
 */
function revive(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = revive(value[i]);
    return value;
  }
  const obj = value as Record<string, unknown>;
  let escaped = false;
  for (const k of Object.keys(obj)) {
    setOwn(obj, k, revive(obj[k]));
    if (ESCAPED_KEY.test(k)) escaped = true;
  }
  if (isTagged(obj)) return untag(obj);
  if (!escaped) return obj;
  const rebuilt: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) setOwn(rebuilt, ESCAPED_KEY.test(k) ? k.slice(1) : k, v);
  return rebuilt;
}

/** The deepest nesting of arrays/objects in JSON text (brackets inside strings not counted). */
export function jsonDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) deepest = Math.max(deepest, ++depth);
    else if (c === 93 || c === 125) depth--;
  }
  return deepest;
}

/** Tagged JSON text → host values (Date, bigint, Uint8Array, Map, ...). Throws TypeError on a bad tag. */
export function decode(text: string): unknown {
  // JSON.parse keeps "__proto__" as an own key; the walk only runs where a tag can be.
  return text.includes(TAG) ? revive(JSON.parse(text)) : JSON.parse(text);
}

/** Tagged JSON value (already parsed, e.g. ExecutionResult.value) → host values. */
export function decodeValue(value: unknown): unknown {
  return value === undefined ? undefined : decode(JSON.stringify(value));
}
