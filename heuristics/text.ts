/** Turning values into bounded prompt text. */
import { sliceSafe } from "../core/index.js";

/**
 * A value as prompt text: strings as they are, everything else as compact JSON. Never throws: BigInt becomes a
 * string, cycles become "[Circular]", undefined becomes "undefined".
 */
export function toPromptText(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "undefined";
  const seen = new WeakSet<object>();
  try {
    const json = JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === "bigint") return v.toString();
      if (typeof v === "number" && !Number.isFinite(v)) return String(v); // NaN/Infinity would become null
      if (typeof v === "object" && v !== null) {
        if (seen.has(v)) return "[Circular]";
        seen.add(v);
      }
      return v;
    });
    return json ?? String(value); // functions and symbols stringify to undefined
  } catch {
    return String(value);
  }
}

/**
 * A value as prompt text of at most `maxChars` characters. When it is longer, the head (about two thirds) and
 * the tail are kept — results often end with the total or the error — with a note of the full size between them.
 */
export function truncateForPrompt(value: unknown, maxChars: number): string {
  const text = toPromptText(value);
  if (text.length <= maxChars) return text;
  const note = (shown: number) => ` …[truncated: ${text.length} chars in full, ${shown} shown]… `;
  // maxChars has at least as many digits as the shown count, so this note is never shorter than the real one.
  const room = maxChars - note(maxChars).length;
  if (room < 16) {
    // Too small for head + note + tail: the head and the full size, or at least a marker that it was cut.
    const short = `…[${text.length} chars]`;
    if (maxChars > short.length) return sliceSafe(text, 0, maxChars - short.length) + short;
    return sliceSafe(text, 0, Math.max(0, maxChars - 1)) + "…";
  }
  const head = sliceSafe(text, 0, Math.ceil((room * 2) / 3));
  const tail = sliceSafe(text, text.length - (room - head.length), text.length);
  return head + note(head.length + tail.length) + tail;
}

/**
 * A cheap token estimate for budgeting prompts: about four characters per token for ASCII text, one per
 * character beyond it (CJK and symbols tokenise densely). Deliberately errs high.
 */
export function estimateTokens(text: string): number {
  let ascii = 0;
  let other = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 128) ascii++;
    else if (c < 0xdc00 || c > 0xdfff) other++; // a low surrogate is the second half of a character counted
  }
  return Math.ceil(ascii / 4 + other);
}
