/**
 * Query guards: the original system's five query rules (URL syntax, missing local files, overlong or repetitive
 * sentences, a blocklist, protocol-less URLs), made safe: no network probe, file existence through an injected
 * function, and a blocklist that reports every removal instead of rewriting silently.
 */
import { distance } from "fastest-levenshtein";
import type { Finding } from "./finding.js";
import { escapeRegExp } from "../core/index.js";

export interface BlockTerm {
  /** A word or phrase, matched case-insensitively on word boundaries. */
  term: string;
  /** remove (default): replace it in the sanitised text and say so; block: refuse the query. */
  action?: "remove" | "block";
  /** What a removed term becomes; default "[removed]" so the model sees that something was taken out. */
  replacement?: string;
}

export interface QueryGuardOptions {
  /**
   * Whether a local path exists. Injected so the guard stays pure (the caller passes fs.existsSync, after
   * expanding ~ if it wants); without it the missing-file rule is skipped.
   */
  exists?: (path: string) => boolean;
  blocklist?: ReadonlyArray<string | BlockTerm>;
  /** Above this many characters: a warning (default 2000). */
  maxChars?: number;
  /** Above this many characters: blocked, the prompt would not fit (default 20000). */
  hardMaxChars?: number;
  /** A sentence with more words than this is flagged (default 60). */
  maxSentenceWords?: number;
}

export interface QueryGuardResult {
  findings: Finding[];
  /** True when a finding has severity block: the session must not start. */
  blocking: boolean;
  /** The query with blocklisted terms replaced; equal to the input when nothing was removed. */
  sanitized: string;
}

export const QUERY_GUARD_DEFAULTS = { maxChars: 2000, hardMaxChars: 20_000, maxSentenceWords: 60 } as const;

const SUPPORTED_SCHEMES = ["http", "https", "ftp", "file"];
/** Top-level domains common enough that "name.tld" in a query is almost surely a site (file extensions left out). */
const COMMON_TLDS = new Set(
  (
    "com org net io dev ai app edu gov mil int co uk de fr es it nl se no fi dk pl ch at be in jp cn kr ru br au " +
    "ca us eu info biz me tv xyz tech site online cloud gg ly so news blog shop"
  ).split(" "),
);

const FULL_URL = /\b[a-z][a-z0-9+.-]*:\/\/[^\s<>"'`]+/gi;
// "http:/x", "https//x", "http:x": a scheme written wrongly.
const BROKEN_SCHEME = /\b(https?)(?::\/(?!\/)|\/\/|:(?![/\s]))([^\s<>"'`]+)/gi;
const EMAIL = /[\w.+-]+@[\w-]+(?:\.[\w-]+)+/g;
const BARE_DOMAIN =
  /(?<![\w@./:~-])((?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+([a-z]{2,24})(?::\d{2,5})?(?:\/[^\s<>"'`]*)?)/gi;
const QUOTED_PATH = /(["'`])((?:~|\.{1,2})?\/[^"'`\n]+|[A-Za-z]:\\[^"'`\n]+)\1/g;
const BARE_PATH =
  /(?<![\w:/.~\\-])((?:~|\.{1,2})?\/[\w.@%+~-]+(?:\/[\w.@%+~-]*)*|[A-Za-z]:\\[\w.@%+~-]+(?:\\[\w.@%+~-]*)*)/g;

/** Checks a user query. Pure: the only outside knowledge is the injected `exists`. */
export function guardQuery(text: string, options: QueryGuardOptions = {}): QueryGuardResult {
  const findings: Finding[] = [];
  if (!text.trim()) {
    findings.push({
      rule: "query.empty",
      severity: "block",
      message: "The query is empty: there is nothing to do.",
    });
    return { findings, blocking: true, sanitized: text };
  }
  const sanitized = applyBlocklist(text, options.blocklist ?? [], findings);
  // URLs and e-mail addresses are masked (same length, so offsets hold) before looking for domains and paths.
  let masked = text;
  const mask = (start: number, end: number) => {
    masked = masked.slice(0, start) + " ".repeat(end - start) + masked.slice(end);
  };
  checkUrls(text, findings, mask);
  for (const m of masked.matchAll(EMAIL)) mask(m.index, m.index + m[0].length);
  checkBareDomains(masked, findings);
  if (options.exists) checkPaths(masked, options.exists, findings);
  checkLength(text, masked, options, findings);
  checkRepetition(masked, findings);
  return { findings, blocking: findings.some((f) => f.severity === "block"), sanitized };
}

/** A case-insensitive, word-bounded pattern for a term; inner whitespace matches any whitespace. */
function termPattern(term: string): RegExp {
  const body = term.trim().split(/\s+/).map(escapeRegExp).join("\\s+");
  const word = /[\p{L}\p{N}_]/u;
  const before = word.test(term.trim()[0] ?? "") ? "(?<![\\p{L}\\p{N}_])" : "";
  const after = word.test(term.trim().slice(-1)) ? "(?![\\p{L}\\p{N}_])" : "";
  return new RegExp(before + body + after, "giu");
}

function applyBlocklist(
  text: string,
  blocklist: ReadonlyArray<string | BlockTerm>,
  findings: Finding[],
): string {
  let sanitized = text;
  for (const entry of blocklist) {
    const rule: BlockTerm = typeof entry === "string" ? { term: entry } : entry;
    if (!rule.term.trim()) continue;
    const pattern = termPattern(rule.term);
    const hits = [...text.matchAll(pattern)];
    const first = hits[0];
    if (!first) continue;
    const span = { start: first.index, end: first.index + first[0].length };
    const times = hits.length === 1 ? "once" : `${hits.length} times`;
    if (rule.action === "block") {
      findings.push({
        rule: "query.blocklist",
        severity: "block",
        message: `The query contains the blocked term "${rule.term}" (${times}); it is not run.`,
        span,
      });
      continue;
    }
    const replacement = rule.replacement ?? "[removed]";
    sanitized = sanitized.replace(pattern, replacement);
    findings.push({
      rule: "query.blocklist",
      severity: "warn",
      message: `Removed the blocklisted term "${rule.term}" (${times}), replaced by "${replacement}".`,
      span,
    });
  }
  return sanitized;
}

/** Trailing punctuation is almost always the sentence's, not the URL's or the path's. */
function trimTrailing(token: string): string {
  let t = token.replace(/[.,;:!?'"]+$/, "");
  // Keep a closing parenthesis only when the token opened one (Wikipedia-style URLs).
  while (t.endsWith(")") && (t.match(/\(/g)?.length ?? 0) < (t.match(/\)/g)?.length ?? 0)) {
    t = t.slice(0, -1).replace(/[.,;:!?'"]+$/, "");
  }
  return t;
}

function checkUrls(text: string, findings: Finding[], mask: (start: number, end: number) => void): void {
  for (const m of text.matchAll(FULL_URL)) {
    const url = trimTrailing(m[0]);
    const span = { start: m.index, end: m.index + url.length };
    mask(span.start, span.end);
    const problem = urlProblem(url);
    if (problem) findings.push({ rule: "query.url_syntax", severity: "warn", span, ...problem });
  }
  for (const m of text.matchAll(BROKEN_SCHEME)) {
    const rest = trimTrailing(m[2] ?? "");
    if (!rest) continue;
    const fixed = `${(m[1] ?? "https").toLowerCase()}://${rest}`;
    const span = { start: m.index, end: m.index + m[0].length - ((m[2] ?? "").length - rest.length) };
    mask(span.start, span.end);
    findings.push({
      rule: "query.url_syntax",
      severity: "warn",
      message: `"${text.slice(span.start, span.end)}" is not a well-formed URL; did you mean ${fixed}?`,
      span,
      suggestions: [fixed],
    });
  }
}

/** What is wrong with a URL, judged by syntax alone (nothing is fetched). */
function urlProblem(url: string): { message: string; suggestions?: string[] } | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { message: `"${url}" is not a valid URL.` };
  }
  const scheme = parsed.protocol.replace(/:$/, "").toLowerCase();
  if (!SUPPORTED_SCHEMES.includes(scheme)) {
    const near = SUPPORTED_SCHEMES.filter((s) => distance(s, scheme) <= 2).sort(
      (a, b) => distance(a, scheme) - distance(b, scheme),
    )[0];
    const fixed = near ? url.replace(/^[^:]+/, near) : undefined;
    return {
      message:
        `"${url}" uses the scheme "${scheme}:", which the tools do not fetch` +
        (fixed ? `; did you mean ${fixed}?` : ` (supported: ${SUPPORTED_SCHEMES.join(", ")}).`),
      ...(fixed ? { suggestions: [fixed] } : {}),
    };
  }
  if (scheme === "file") return undefined;
  const host = parsed.hostname.toLowerCase();
  if (!host) return { message: `"${url}" has no host name.` };
  if (host === "localhost" || /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.startsWith("[")) return undefined;
  const labels = host.split(".");
  const bad = labels.find((l) => !/^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/.test(l));
  if (bad !== undefined) {
    return { message: `"${url}" has an invalid host name "${host}" (label "${bad}").` };
  }
  const tld = labels[labels.length - 1] ?? "";
  if (labels.length < 2 || !/^(?:[a-z]{2,}|xn--[a-z0-9-]+)$/.test(tld)) {
    return { message: `"${url}" has no valid top-level domain in its host "${host}".` };
  }
  return undefined;
}

function checkBareDomains(masked: string, findings: Finding[]): void {
  for (const m of masked.matchAll(BARE_DOMAIN)) {
    const token = trimTrailing(m[1] ?? "");
    const tld = (m[2] ?? "").toLowerCase();
    if (!token.toLowerCase().startsWith("www.") && !COMMON_TLDS.has(tld)) continue;
    const fixed = `https://${token}`;
    findings.push({
      rule: "query.url_no_protocol",
      severity: "info",
      message: `"${token}" looks like a web address without a protocol; tools need the full form ${fixed}.`,
      span: { start: m.index, end: m.index + token.length },
      suggestions: [fixed],
    });
  }
}

function checkPaths(masked: string, exists: (path: string) => boolean, findings: Finding[]): void {
  const seen = new Set<string>();
  const report = (path: string, start: number) => {
    if (seen.has(path)) return;
    seen.add(path);
    if (exists(path)) return;
    findings.push({
      rule: "query.file_missing",
      severity: "warn",
      message: `The local path "${path}" does not exist; it may be mistyped (or it is meant to be created).`,
      span: { start, end: start + path.length },
    });
  };
  const quoted = new Set<number>();
  for (const m of masked.matchAll(QUOTED_PATH)) {
    const path = m[2] ?? "";
    quoted.add(m.index + 1);
    report(path, m.index + 1);
  }
  for (const m of masked.matchAll(BARE_PATH)) {
    if (quoted.has(m.index)) continue;
    const path = trimTrailing(m[1] ?? "");
    // "/help" or "km/h" are not paths; "/etc/hosts", "./a", "~/notes.md" and "/notes.txt" are.
    const segments = path.split(/[/\\]/).filter(Boolean);
    const explicit = /^(?:~|\.{1,2})[/\\]/.test(path) || /^[A-Za-z]:\\/.test(path);
    const hasExtension = /\.[A-Za-z0-9]{1,8}$/.test(segments[segments.length - 1] ?? "");
    if (segments.length < (explicit ? 1 : 2) && !hasExtension) continue;
    report(path, m.index);
  }
}

function sentencesOf(masked: string): { text: string; start: number }[] {
  const out: { text: string; start: number }[] = [];
  const re = /[^.!?\n]+(?:[.!?]+|$|\n)/g;
  for (const m of masked.matchAll(re)) {
    const text = m[0].trim();
    if (text) out.push({ text, start: m.index + (m[0].length - m[0].trimStart().length) });
  }
  return out;
}

function checkLength(text: string, masked: string, options: QueryGuardOptions, findings: Finding[]): void {
  const hardMax = options.hardMaxChars ?? QUERY_GUARD_DEFAULTS.hardMaxChars;
  const max = options.maxChars ?? QUERY_GUARD_DEFAULTS.maxChars;
  if (text.length > hardMax) {
    findings.push({
      rule: "query.overlong",
      severity: "block",
      message: `The query is ${text.length} characters long, over the limit of ${hardMax}; shorten it or put the material in a file and name the file.`,
    });
  } else if (text.length > max) {
    findings.push({
      rule: "query.overlong",
      severity: "warn",
      message: `The query is long (${text.length} characters, more than ${max}); the goal may be hard to pin down.`,
    });
  }
  const maxWords = options.maxSentenceWords ?? QUERY_GUARD_DEFAULTS.maxSentenceWords;
  for (const s of sentencesOf(masked)) {
    const words = s.text.split(/\s+/).filter(Boolean).length;
    if (words <= maxWords) continue;
    findings.push({
      rule: "query.long_sentence",
      severity: "warn",
      message: `A sentence has ${words} words (more than ${maxWords}); it may hold several requests at once.`,
      span: { start: s.start, end: s.start + s.text.length },
    });
  }
}

function checkRepetition(masked: string, findings: Finding[]): void {
  const counts = new Map<string, { n: number; start: number; length: number }>();
  for (const s of sentencesOf(masked)) {
    const key = s.text
      .toLowerCase()
      .replace(/[.!?]+$/, "")
      .replace(/\s+/g, " ");
    if (key.split(" ").length < 3) continue;
    const c = counts.get(key);
    if (c) c.n++;
    else counts.set(key, { n: 1, start: s.start, length: s.text.length });
  }
  for (const [key, c] of counts) {
    if (c.n < 2) continue;
    findings.push({
      rule: "query.repetitive",
      severity: "warn",
      message: `The sentence "${key.length > 60 ? key.slice(0, 57) + "..." : key}" appears ${c.n} times.`,
      span: { start: c.start, end: c.start + c.length },
    });
  }
  const run = /(?<![\p{L}\p{N}])([\p{L}\p{N}]+)(?:\s+\1(?![\p{L}\p{N}])){3,}/giu.exec(masked);
  if (run) {
    findings.push({
      rule: "query.repetitive",
      severity: "warn",
      message: `The word "${run[1]}" is repeated ${run[0].split(/\s+/).length} times in a row.`,
      span: { start: run.index, end: run.index + run[0].length },
    });
  }
  const chars = /(\S)\1{19,}/u.exec(masked);
  if (chars) {
    findings.push({
      rule: "query.repetitive",
      severity: "warn",
      message: `The character "${chars[1]}" is repeated ${chars[0].length} times in a row.`,
      span: { start: chars.index, end: chars.index + chars[0].length },
    });
  }
  const words = masked.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  if (words.length >= 40 && new Set(words).size / words.length < 0.3) {
    findings.push({
      rule: "query.repetitive",
      severity: "warn",
      message: `The query repeats itself: ${new Set(words).size} distinct words in ${words.length}.`,
    });
  }
}
