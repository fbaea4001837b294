/**
 * Tolerant reading of model output: find the JSON in the text, repair what is safe to repair without
 * another call (fences, prose around it, single quotes, trailing commas, comments, Python literals), then
 * validate against the zod schema. What cannot be repaired is reported with a kind, so the caller can show
 * the model its error once and then raise a typed ModelError.
 */
import { jsonrepair } from "jsonrepair";
import type { z } from "zod";

export type ParseFailureKind = "empty" | "unparseable" | "truncated" | "invalid";

export type ParseOutcome<T> =
  { ok: true; value: T; repaired: boolean } | { ok: false; kind: ParseFailureKind; message: string };

/** Common wrapper keys models put around the object they were asked for. */
const WRAPPER_KEYS = ["data", "result", "response", "output", "json", "answer", "value"];

/** Parse and validate one model reply. */
export function parseModelOutput<T>(text: string, schema: z.ZodType<T>, schemaName = ""): ParseOutcome<T> {
  const found = findJson(text);
  if (!found.ok) return found;
  const candidates = unwrapCandidates(found.value, schemaName);
  let firstError: z.ZodError | undefined;
  for (const c of candidates) {
    const r = schema.safeParse(c);
    if (r.success) return { ok: true, value: r.data, repaired: found.repaired || c !== found.value };
    firstError ??= r.error;
  }
  return { ok: false, kind: "invalid", message: formatZodError(firstError!) };
}

/** Find and parse the JSON value in a reply; repairs syntax but never invents a truncated tail. */
export function findJson(
  text: string,
): { ok: true; value: unknown; repaired: boolean } | { ok: false; kind: ParseFailureKind; message: string } {
  const trimmed = text.replace(/^\uFEFF/, "").trim();
  if (!trimmed) return { ok: false, kind: "empty", message: "the reply was empty" };
  try {
    const direct = JSON.parse(trimmed) as unknown;
    // A JSON string that itself holds JSON: the model double-encoded its answer.
    if (typeof direct === "string" && /^\s*[[{]/.test(direct)) {
      const inner = findJson(direct);
      return inner.ok ? { ...inner, repaired: true } : inner;
    }
    return { ok: true, value: direct, repaired: false };
  } catch {
    // fall through to extraction and repair
  }
  const body = stripFence(trimmed);
  const start = body.search(/[[{]/);
  if (start < 0) {
    return { ok: false, kind: "unparseable", message: `no JSON object in the reply: ${preview(trimmed)}` };
  }
  const end = matchingEnd(body, start);
  if (end < 0) {
    return {
      ok: false,
      kind: "truncated",
      message: `the JSON in the reply is cut off (unclosed brackets or string): ${preview(body.slice(start), true)}`,
    };
  }
  const slice = body.slice(start, end + 1);
  try {
    return { ok: true, value: JSON.parse(slice) as unknown, repaired: true };
  } catch {
    // needs syntax repair
  }
  try {
    return { ok: true, value: JSON.parse(jsonrepair(slice)) as unknown, repaired: true };
  } catch (e) {
    return {
      ok: false,
      kind: "unparseable",
      message: `the reply is not valid JSON (${(e as Error).message}): ${preview(slice)}`,
    };
  }
}

/** The content of the first Markdown code fence, or the text itself; an unclosed fence runs to the end. */
function stripFence(text: string): string {
  const open = /```[a-zA-Z0-9_-]*[^\S\n]*\n?/.exec(text);
  if (!open) return text;
  const from = open.index + open[0].length;
  const close = text.indexOf("```", from);
  return close < 0 ? text.slice(from) : text.slice(from, close);
}

/**
 * Index of the bracket closing the one at `start`, honouring double- and single-quoted strings and
 * escapes; -1 when the text ends first (truncated output).
 */
function matchingEnd(text: string, start: number): number {
  const stack: string[] = [];
  let quote: string | null = null;
  for (let i = start; i < text.length; i++) {
    const ch = text[i]!;
    if (quote) {
      if (ch === "\\") i++;
      else if (ch === quote) quote = null;
      continue;
    }
    if (ch === '"' || ch === "'") {
      // An apostrophe inside a bare word (don't) is not a string opener.
      if (ch === "'" && /\w/.test(text[i - 1] ?? "")) continue;
      quote = ch;
    } else if (ch === "{") stack.push("}");
    else if (ch === "[") stack.push("]");
    else if (ch === "}" || ch === "]") {
      if (stack.pop() !== ch) return -1;
      if (stack.length === 0) return i;
    }
  }
  return -1;
}

/** The value itself first, then the unwrapped forms models commonly produce. */
function unwrapCandidates(value: unknown, schemaName: string): unknown[] {
  const out = [value];
  if (Array.isArray(value) && value.length === 1) out.push(value[0]);
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const keys = Object.keys(value);
    if (keys.length === 1) {
      const key = keys[0]!;
      const inner = (value as Record<string, unknown>)[key];
      const wrapperish = WRAPPER_KEYS.includes(key.toLowerCase()) || key === schemaName;
      if (wrapperish && inner && typeof inner === "object") out.push(inner);
    }
  }
  return out;
}

/** Zod issues as short lines the model (and a human) can act on: `- field.path: message`. */
export function formatZodError(error: z.ZodError): string {
  return error.issues
    .slice(0, 12)
    .map((i) => `- ${i.path.length ? i.path.join(".") : "(top level)"}: ${i.message}`)
    .join("\n");
}

function preview(text: string, tail = false): string {
  const flat = text.replace(/\s+/g, " ");
  if (flat.length <= 160) return JSON.stringify(flat);
  return JSON.stringify(tail ? `…${flat.slice(-160)}` : `${flat.slice(0, 160)}…`);
}
