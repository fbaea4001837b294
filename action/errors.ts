/**
 * Turning what went wrong in a step into a StepError the model can act on: a typed code, a one-line message,
 * and the line and column in the model's own code (the wrapper's first line is not counted).
 */
import { distance } from "fastest-levenshtein";
// Types only: this file runs in the sandbox's worker threads too, where loading core/ (zod and every
// schema) would cost each thread more than its QuickJS engine does.
import type { StepError, ToolErrorCode } from "../core/index.js";

/** The step's code is compiled as the body of `(async function () {\n<code>\n})`: one line before it. */
export const CODE_FILE = "step.js";
export const WRAPPER_LINES = 1;

/** What the prelude reports for an error the code did not catch (see prelude.ts errorJson). */
export interface ThrownInfo {
  name: string;
  message: string;
  stack?: string;
  toolError?: boolean;
  code?: string;
  tool?: string;
}

/** Line and column of the first frame in the step's own code, corrected for the wrapper. */
export function codeLocation(
  stack: string | undefined,
  lineCount: number,
): { line?: number; column?: number } {
  const m = stack ? new RegExp(`${CODE_FILE.replace(".", "\\.")}:(\\d+)(?::(\\d+))?`).exec(stack) : null;
  if (!m) return {};
  const line = Math.min(Math.max(Number(m[1]) - WRAPPER_LINES, 1), Math.max(lineCount, 1));
  return m[2] === undefined ? { line } : { line, column: Number(m[2]) };
}

function at(loc: { line?: number; column?: number }): string {
  if (loc.line === undefined) return "";
  return loc.column === undefined ? ` (line ${loc.line})` : ` (line ${loc.line}, column ${loc.column})`;
}

/**
 * Longest name a "did you mean" search is run for: edit distance costs length × length, and the name may come
 * from the step's code (a 4 MB property name took the host 33 s). No real tool name is near this long.
 */
export const MAX_SUGGEST_CHARS = 256;

/** Up to `n` names closest to `wanted`, best first; none for a name longer than MAX_SUGGEST_CHARS. */
export function closestNames(wanted: string, names: Iterable<string>, n = 3): string[] {
  if (wanted.length > MAX_SUGGEST_CHARS) return [];
  const w = wanted.toLowerCase();
  const tail = (s: string) => s.slice(s.lastIndexOf(".") + 1).toLowerCase();
  const scored: [number, string][] = [];
  for (const name of new Set(names)) {
    // Compare with the whole name and with its part after the server prefix: "mutiply" ~ "math.multiply".
    const d = Math.min(distance(w, name.toLowerCase()), distance(tail(w), tail(name)));
    scored.push([d, name]);
  }
  scored.sort((a, b) => a[0] - b[0] || a[1].localeCompare(b[1]));
  const limit = Math.max(3, Math.ceil(tail(w).length / 2));
  const near = scored.filter(([d]) => d <= limit).slice(0, n);
  return (near.length ? near : scored.slice(0, n)).map(([, name]) => name);
}

const STACK_MESSAGES = /^(stack overflow|Maximum call stack size exceeded)/i;

/** A SyntaxError from compiling the step's code. */
export function syntaxError(info: ThrownInfo, lineCount: number, lineNumber?: number): StepError {
  const loc = codeLocation(info.stack, lineCount);
  if (loc.line === undefined && lineNumber !== undefined) {
    loc.line = Math.min(Math.max(lineNumber - WRAPPER_LINES, 1), Math.max(lineCount, 1));
  }
  return { code: "SANDBOX_SYNTAX", message: `SyntaxError: ${info.message}${at(loc)}`, ...loc };
}

/** An error the step's code threw and did not catch. */
export function thrownError(
  info: ThrownInfo,
  lineCount: number,
  knownNames: () => Iterable<string>,
  isToolCode: (code: unknown) => code is ToolErrorCode,
): StepError {
  if (info.toolError) {
    // A ToolError the code built itself may carry any code; only ToolError's own codes pass through.
    const code = isToolCode(info.code) ? info.code : "TOOL_ERROR";
    return { code, message: info.message, ...(info.tool && { tool: info.tool }) };
  }
  const loc = codeLocation(info.stack, lineCount);
  if (STACK_MESSAGES.test(info.message)) {
    return {
      code: "SANDBOX_STACK",
      message: `${info.name}: ${info.message} (too deep recursion)${at(loc)}`,
      ...loc,
    };
  }
  if (/^out of memory/i.test(info.message)) {
    return { code: "SANDBOX_MEMORY", message: `the step ran out of memory${at(loc)}`, ...loc };
  }
  if (/^(string too long|invalid string length|BigInt is too large)/i.test(info.message)) {
    const what = `${info.name}: ${info.message}`;
    return {
      code: "SANDBOX_MEMORY",
      message: `the step built a value too large for its memory (${what})${at(loc)}`,
      ...loc,
    };
  }
  let message = `${info.name}: ${info.message}`;
  const unknown = info.name === "ReferenceError" ? /^'?([\w$]+)'? is not defined/.exec(info.message) : null;
  if (unknown) {
    const near = closestNames(unknown[1]!, knownNames());
    if (near.length) message += `; closest tools: ${near.join(", ")}`;
  }
  return { code: "SANDBOX_RUNTIME", message: `${message}${at(loc)}`, ...loc };
}
