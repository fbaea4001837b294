/**
 * OpenAI strict structured outputs accept a subset of JSON Schema: every property listed in `required`,
 * `additionalProperties: false` on every object, no free-form objects. `strictSchema` rewrites a schema into
 * that subset (an optional property becomes a required one that may be null) or says it cannot;
 * `dropOptionalNulls` turns the nulls back into absent fields so the zod schema (with `.optional()`) accepts
 * the reply.
 */

type Json = Record<string, unknown>;

/** Keywords strict mode rejects; they are still checked by zod after parsing. */
const UNSUPPORTED = ["minLength", "maxLength", "default", "examples", "$schema", "title"];

/** The strict-compatible form of `schema`, or undefined when it has a part strict mode cannot express. */
export function strictSchema(schema: Json): Json | undefined {
  try {
    const root = convert(schema);
    return root.type === "object" ? root : undefined;
  } catch (e) {
    if (e instanceof NotStrict) return undefined;
    throw e;
  }
}

class NotStrict extends Error {}

function convert(s: Json): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(s)) if (!UNSUPPORTED.includes(k)) out[k] = v;
  if ("const" in out) {
    out.enum = [out.const];
    delete out.const;
  }
  if (Array.isArray(out.oneOf)) {
    out.anyOf = out.oneOf;
    delete out.oneOf;
  }
  if (Array.isArray(out.anyOf)) out.anyOf = (out.anyOf as Json[]).map(convert);
  for (const defs of ["$defs", "definitions"]) {
    if (out[defs] && typeof out[defs] === "object") {
      out[defs] = Object.fromEntries(
        Object.entries(out[defs] as Json).map(([k, v]) => [k, convert(v as Json)]),
      );
    }
  }
  if (out.items && typeof out.items === "object") out.items = convert(out.items as Json);
  const isObject = out.type === "object" || (Array.isArray(out.type) && out.type.includes("object"));
  if (isObject) {
    const props = out.properties as Record<string, Json> | undefined;
    // A record or a free-form object: strict mode needs every key named.
    if (!props || (out.additionalProperties && out.additionalProperties !== false)) throw new NotStrict();
    const required = new Set((out.required as string[] | undefined) ?? []);
    out.properties = Object.fromEntries(
      Object.entries(props).map(([k, v]) => [k, required.has(k) ? convert(v) : nullable(convert(v))]),
    );
    out.required = Object.keys(props);
    out.additionalProperties = false;
  }
  // `{}` (anything) and schemas with neither a type nor a union cannot be strict.
  if (!("type" in out) && !("anyOf" in out) && !("enum" in out) && !("$ref" in out)) throw new NotStrict();
  return out;
}

function nullable(s: Json): Json {
  if (typeof s.type === "string" && !("enum" in s)) return { ...s, type: [s.type, "null"] };
  if (Array.isArray(s.anyOf)) return { ...s, anyOf: [...(s.anyOf as Json[]), { type: "null" }] };
  return { anyOf: [s, { type: "null" }] };
}

/**
 * Remove the nulls strict mode made the model write for fields the original schema leaves optional (and does
 * not allow to be null), walking the value along the original schema.
 */
export function dropOptionalNulls(value: unknown, schema: Json, root: Json = schema): unknown {
  const s = resolveRef(schema, root);
  if (Array.isArray(value)) {
    const items = s.items as Json | undefined;
    return items ? value.map((v) => dropOptionalNulls(v, items, root)) : value;
  }
  if (!value || typeof value !== "object") return value;
  const branches = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (branches) {
    // The object branch that names every key of the value.
    const keys = Object.keys(value);
    const branch = branches
      .map((b) => resolveRef(b, root))
      .find((b) => b.properties && keys.every((k) => k in (b.properties as Json)));
    return branch ? dropOptionalNulls(value, branch, root) : value;
  }
  const props = s.properties as Record<string, Json> | undefined;
  if (!props) return value;
  const required = new Set((s.required as string[] | undefined) ?? []);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const prop = props[k];
    if (v === null && prop && !required.has(k) && !allowsNull(resolveRef(prop, root))) continue;
    out[k] = prop ? dropOptionalNulls(v, prop, root) : v;
  }
  return out;
}

function allowsNull(s: Json): boolean {
  if (s.type === "null" || (Array.isArray(s.type) && s.type.includes("null"))) return true;
  if (Array.isArray(s.enum) && s.enum.includes(null)) return true;
  const branches = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  return !!branches?.some(allowsNull);
}

function resolveRef(s: Json, root: Json): Json {
  const ref = s.$ref;
  if (typeof ref !== "string") return s;
  const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
  const target = m ? (root[m[1]!] as Record<string, Json> | undefined)?.[m[2]!] : undefined;
  return target ?? s;
}
