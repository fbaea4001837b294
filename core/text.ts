/** Small text helpers several layers need. */

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** Cut at a code-point boundary so a surrogate pair is never split in half. */
export function sliceSafe(text: string, start: number, end: number): string {
  let s = Math.max(0, start);
  let e = Math.min(text.length, end);
  if (s > 0 && s < text.length && isLowSurrogate(text.charCodeAt(s))) s++;
  if (e > 0 && e < text.length && isLowSurrogate(text.charCodeAt(e))) e--;
  return text.slice(s, e);
}

/** The head of a text, at most `maxChars` long, ending in "…" when cut: for one-line summaries. */
export function clip(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return sliceSafe(text, 0, Math.max(0, maxChars - 1)) + "…";
}

/** Whitespace runs (newlines included) as one space, trimmed. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** `s` as a literal inside a regular expression. */
export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/* eslint-disable no-control-regex -- matching control characters is the point here */
/** Any C0 control but tab and newline, DEL, or any C1 control: the cheap test before the full strip. */
const ANY_CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;
/**
 * Terminal control sequences, longest first: CSI (`ESC [` or 0x9b, parameters, final byte); the string
 * sequences OSC, DCS, SOS, PM, APC (ESC ] P X ^ _ or their C1 forms) up to BEL or ST, or to the end when
 * unterminated (so a title-setting OSC cannot swallow what follows on the terminal); any other ESC
 * sequence; then any single control character left.
 */
const CONTROL_SEQUENCES =
  /(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[\s\S]*?(?:\x07|\x1b\\|\x9c|$)|\x1b[ -/]*[0-~]?|[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;
/* eslint-enable no-control-regex */

/**
 * `s` without terminal control sequences or control characters (newline and tab are kept). Everything a
 * server sends that may reach a terminal or a prompt goes through this once, at the hub's edge: an MCP
 * server must not be able to move the cursor, rewrite what was printed, set the window title or hide text.
 */
export function stripControls(s: string): string {
  return ANY_CONTROL.test(s) ? s.replace(CONTROL_SEQUENCES, "") : s;
}

/** stripControls on every string inside a JSON-like value (object keys too); other values as they are. */
export function stripControlsDeep(value: unknown): unknown {
  if (typeof value === "string") return stripControls(value);
  if (Array.isArray(value)) return value.map(stripControlsDeep);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[stripControls(k)] = stripControlsDeep(v);
    return out;
  }
  return value;
}

/** The first line of a description that says something: servers often start theirs with a blank line. */
export function summaryLine(description: string): string {
  return (
    description
      .split("\n")
      .map((l) => l.trim())
      .find((l) => l !== "") ?? ""
  );
}
