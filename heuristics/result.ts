/**
 * Result guards: a CODE step whose code ran may still have failed — tools often report errors as ordinary
 * text, and a forgotten `return` yields nothing. These checks turn such results into typed failures so the
 * loop replans instead of concluding from an error message.
 */
import type { Finding } from "./finding.js";
import { toPromptText } from "./text.js";

export type ResultExpectation = "any" | "number" | "string" | "array" | "object";

export interface ResultGuardOptions {
  /** What the step was meant to produce; "number" turns non-numbers into failures (default "any"). */
  expect?: ResultExpectation;
  /** Accept [] and {} (e.g. a search that may rightly find nothing). Default false. */
  allowEmpty?: boolean;
  /** Strings up to this length are searched for error phrases anywhere, longer ones only at the start (default 300). */
  shortTextChars?: number;
}

export interface ResultGuardResult {
  /** False when a finding has severity block: the step failed even though its code ran. */
  ok: boolean;
  findings: Finding[];
}

/** Phrases that open an error report. */
const ERROR_START: readonly RegExp[] = [
  /^\s*(?:error|exception|fatal|failed|failure)\b\s*[:!-]/i,
  /^\s*[A-Z][A-Za-z]*(?:Error|Exception)\b\s*:/,
  /^\s*\[?errno\s*-?\d+\]?/i,
  /^\s*(?:error|exception)\s*$/i,
];
/** Phrases that mean failure wherever they appear in a short text. */
const ERROR_ANYWHERE =
  /\b(?:file|directory|path|resource|page|tool) not found\b|no such file or directory|\bENOENT\b|\bEACCES\b|\bECONNREFUSED\b|\bETIMEDOUT\b|permission denied|access denied|\b404 not found\b|\b403 forbidden\b|\b401 unauthori[sz]ed\b|internal server error|\bHTTP [45]\d\d\b|\b(?:request|operation|connection) timed out\b|rate limit(?:ed| exceeded)|(?:could not|couldn't|unable to|failed to) (?:find|open|read|load|connect|fetch|parse|resolve)\b|\bis not defined\b|\bundefined is not\b|\bcannot read propert/i;
const TRACEBACK = /Traceback \(most recent call last\)|\n\s+at [\w$.<>[\] ]+ \(?[^\s()]+:\d+:\d+\)?/;
const EMPTY_WORDS = new Set(["", "null", "undefined", "none", "nil", "n/a"]);
const NOT_NUMBERS = new Set(["NaN", "Infinity", "-Infinity"]);

/** The sandbox's tag for a value JSON cannot carry (action/codec.ts): {"$pda": kind, ...}. */
function tagOf(value: unknown): { kind: string; [k: string]: unknown } | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const kind = (value as Record<string, unknown>).$pda;
  return typeof kind === "string" ? { ...(value as Record<string, unknown>), kind } : undefined;
}

/**
 * Checks the value a CODE step returned: plain JSON, or the sandbox's tagged JSON (ExecutionResult.value), in
 * which undefined, NaN, Error objects and functions are explicit. Pure; never throws.
 */
export function guardResult(rawValue: unknown, options: ResultGuardOptions = {}): ResultGuardResult {
  const findings: Finding[] = [];
  const expect = options.expect ?? "any";
  const short = options.shortTextChars ?? 300;
  const tag = tagOf(rawValue);
  const value = tag?.kind === "undefined" ? undefined : rawValue;

  if (tag?.kind === "error") {
    const code = typeof tag.code === "string" ? `[${tag.code}]` : "";
    findings.push({
      rule: "result.error_field",
      severity: "block",
      message: `The code returned an error instead of a value: ${String(tag.name ?? "Error")}${code}: ${firstLine(String(tag.message ?? ""))}`,
    });
    return done(findings);
  }
  if (tag?.kind === "function" || tag?.kind === "symbol") {
    const name = typeof tag.name === "string" && tag.name ? tag.name : "";
    findings.push({
      rule: "result.unexpected_type",
      severity: "block",
      message:
        tag.kind === "function"
          ? `The code returned the function${name ? ` \`${name}\`` : ""} itself, not its result: call it, e.g. \`return await ${name || "f"}(...)\`.`
          : "The code returned a Symbol, which is not a result.",
    });
    return done(findings);
  }

  const empty = emptiness(value);
  if (
    empty &&
    !(options.allowEmpty && (Array.isArray(value) || typeof value === "object") && value !== null)
  ) {
    findings.push({
      rule: "result.empty",
      severity: "block",
      message:
        value === undefined
          ? "The code returned nothing (undefined): `return` the value the step is meant to produce."
          : `The result is empty (${empty}); the step did not produce what it was meant to.`,
    });
    return done(findings);
  }

  for (const text of textsOf(value, short)) {
    if (TRACEBACK.test(text)) {
      findings.push({
        rule: "result.traceback",
        severity: "block",
        message: `The result is a stack trace, not an answer: ${firstLine(text)}`,
      });
      break;
    }
    if (ERROR_START.some((re) => re.test(text)) || (text.length <= short && ERROR_ANYWHERE.test(text))) {
      findings.push({
        rule: "result.error_text",
        severity: "block",
        message: `The result reads as an error message: "${firstLine(text)}"`,
      });
      break;
    }
  }

  const field = errorField(value);
  if (field) findings.push({ rule: "result.error_field", severity: "block", message: field });
  const parts = typeof value === "object" && value !== null ? Object.values(value) : [];
  const errors = parts.map(tagOf).filter((t) => t?.kind === "error");
  if (errors.length > 0 && !field) {
    // Some parts failed (e.g. parallel calls whose errors were caught and kept): worth saying, not fatal.
    const e = errors[0]!;
    findings.push({
      rule: "result.error_field",
      severity: errors.length === parts.length ? "block" : "warn",
      message: `${errors.length} of ${parts.length} parts of the result are errors, e.g. ${String(e.name ?? "Error")}: ${firstLine(String(e.message ?? ""))}`,
    });
  }

  const nan = findNonNumber(value, "", 0);
  if (nan !== undefined) {
    findings.push({
      rule: "result.not_a_number",
      severity: "block",
      message: `The result contains ${nan}, which is not a finite number (a calculation went wrong?).`,
    });
  }
  if (expect !== "any") findings.push(...checkExpectation(value, expect, findings));
  return done(findings);
}

function done(findings: Finding[]): ResultGuardResult {
  return { ok: !findings.some((f) => f.severity === "block"), findings };
}

function firstLine(text: string): string {
  const line = text.trim().split(/\r?\n/)[0] ?? "";
  return line.length > 160 ? `${line.slice(0, 157)}...` : line;
}

/** Why the value counts as empty, or undefined when it does not. */
function emptiness(value: unknown): string | undefined {
  if (value === undefined) return "undefined";
  if (value === null) return "null";
  if (typeof value === "string" && EMPTY_WORDS.has(value.trim().toLowerCase())) {
    return value.trim() ? `the text "${value.trim()}"` : "an empty string";
  }
  if (Array.isArray(value) && value.length === 0) return "an empty list";
  if (typeof value === "object" && Object.keys(value).length === 0) return "an empty object";
  return undefined;
}

/**
 * The strings worth reading for error phrases: the value itself, the text items of an MCP-style content list,
 * and — for small values only, so long legitimate data is not scanned — every string inside.
 */
function textsOf(value: unknown, short: number): string[] {
  if (typeof value === "string") return [value];
  if (typeof value !== "object" || value === null) return [];
  const out: string[] = [];
  const content = (value as { content?: unknown }).content;
  if (Array.isArray(content)) {
    for (const c of content) {
      const text = (c as { text?: unknown } | null)?.text;
      if (typeof text === "string") out.push(text);
    }
  }
  if (toPromptText(value).length <= short * 2) {
    const walk = (v: unknown, depth: number) => {
      if (typeof v === "string") out.push(v);
      // Tagged values are the sandbox's own markup ({"$pda": "error"} is judged elsewhere), not text.
      else if (depth < 3 && typeof v === "object" && v !== null && !tagOf(v)) {
        Object.values(v).forEach((x) => walk(x, depth + 1));
      }
    };
    walk(value, 0);
  }
  return out;
}

/** Objects that announce their own failure: {error: ...}, {isError: true}, {ok: false}, {status: "error"}. */
function errorField(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  const say = (what: string) => `The result reports a failure (${what}).`;
  if (v.isError === true) return say(`isError: true${detail(v)}`);
  if (v.error !== undefined && v.error !== null && v.error !== false && v.error !== "") {
    return say(`error: ${firstLine(toPromptText(v.error))}`);
  }
  if (v.ok === false || v.success === false)
    return say(`${v.ok === false ? "ok" : "success"}: false${detail(v)}`);
  if (typeof v.status === "string" && /^(?:error|failed|failure)$/i.test(v.status))
    return say(`status: ${v.status}${detail(v)}`);
  return undefined;
}

function detail(v: Record<string, unknown>): string {
  // A typed code (a sub-agent's report) is what the next decision routes on: keep it in the message.
  const code = typeof v.error_code === "string" && v.error_code ? `, error_code ${v.error_code}` : "";
  const m = v.message ?? v.reason ?? v.detail;
  return code + (typeof m === "string" && m ? `, "${firstLine(m)}"` : "");
}

/** "NaN at .a[2]"-style description of the first non-finite number inside the value. */
function findNonNumber(value: unknown, path: string, depth: number): string | undefined {
  if (typeof value === "number" && !Number.isFinite(value)) return `${value} at ${path || "top level"}`;
  const tag = tagOf(value);
  if (tag?.kind === "number") return `${String(tag.value)} at ${path || "top level"}`;
  if (typeof value === "string" && NOT_NUMBERS.has(value.trim()))
    return `"${value.trim()}" at ${path || "top level"}`;
  if (depth >= 3 || typeof value !== "object" || value === null) return undefined;
  for (const [k, v] of Object.entries(value)) {
    const found = findNonNumber(v, Array.isArray(value) ? `${path}[${k}]` : `${path}.${k}`, depth + 1);
    if (found) return found;
  }
  return undefined;
}

function checkExpectation(value: unknown, expect: ResultExpectation, already: Finding[]): Finding[] {
  if (already.some((f) => f.severity === "block")) return [];
  const got = Array.isArray(value) ? "a list" : value === null ? "null" : `a ${typeof value}`;
  if (expect === "number") {
    if (typeof value === "number") return [];
    if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value.trim()))) {
      return [
        {
          rule: "result.not_a_number",
          severity: "info",
          message: `The number came back as text ("${value.trim()}").`,
        },
      ];
    }
    const single =
      typeof value === "object" && value !== null && !Array.isArray(value) ? Object.values(value) : [];
    if (single.length === 1 && typeof single[0] === "number") return [];
    return [
      {
        rule: "result.not_a_number",
        severity: "block",
        message: `A number was expected but the result is ${got}: ${firstLine(toPromptText(value))}`,
      },
    ];
  }
  const fits =
    (expect === "string" && typeof value === "string") ||
    (expect === "array" && Array.isArray(value)) ||
    (expect === "object" && typeof value === "object" && value !== null && !Array.isArray(value));
  if (fits) return [];
  return [
    {
      rule: "result.unexpected_type",
      severity: "warn",
      message: `A ${expect === "array" ? "list" : expect} was expected but the result is ${got}.`,
    },
  ];
}
