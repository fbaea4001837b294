/**
 * What the store does to every value before it is written: secrets are replaced by a marker and oversized
 * text is cut, with the full size kept beside it. Applied at write, so nothing secret or huge reaches the
 * file (or its WAL, or the search index) in the first place. Secrets are the values of secret-looking
 * environment variables and configured values (found literally), and whatever the rules of redact.ts
 * recognise by shape or by the name next to it.
 */

import { escapeRegExp, type AgentSession, type Step } from "../core/index.js";
import { BUILTIN_RULES, REDACTED, isSecretPair, marker, type RedactRule } from "./redact.js";

/** Environment variable names whose values are treated as secrets: these words anywhere in the name… */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL/i;
/** …or these as a whole part of it (`DB_PASS`, `GH_PAT`, but not `PATH` or `PASSENGER`). */
const SECRET_PART = /^(?:PASS|PAT|PWD|DSN|AUTH|COOKIE)$/i;
/** user:password@ in a URL-valued variable (DATABASE_URL, REDIS_URL, …): its password is a secret. */
const URL_PASSWORD = /^[a-z][a-z0-9+.-]*:\/\/[^\s:/?#@]*:([^\s/?#@]+)@/i;
const MIN_SECRET_LENGTH = 8;

export interface SanitizeLimits {
  /** Longest string kept in any column or JSON field (prompts, raw responses, messages). */
  maxTextChars: number;
  /** Longest JSON kept for a step's result value; larger results become a truncation marker. */
  maxResultChars: number;
  /** Most console lines kept per step. */
  maxLogLines: number;
}

export const DEFAULT_LIMITS: SanitizeLimits = {
  maxTextChars: 200_000,
  maxResultChars: 64_000,
  maxLogLines: 200,
};

/** The secret values to redact: secret-looking env vars (values ≥ 8 chars) plus configured ones. */
export function collectSecrets(env: NodeJS.ProcessEnv, extra: readonly string[] = []): Map<string, string> {
  const secrets = new Map<string, string>();
  for (const [name, value] of Object.entries(env)) {
    if (!value) continue;
    const secretName = SECRET_NAME.test(name) || name.split(/[_.-]/).some((part) => SECRET_PART.test(part));
    if (value.length >= MIN_SECRET_LENGTH && secretName) secrets.set(value, name);
    const password = URL_PASSWORD.exec(value)?.[1];
    if (password && password.length >= 4) {
      secrets.set(value, name);
      secrets.set(password, name);
    }
  }
  for (const value of extra) {
    if (value && value.length >= 4) secrets.set(value, "configured");
  }
  return secrets;
}

/** What text() leaves where it cut a text. */
const CUT = "…[truncated: ";

/**
 * Whether text() may have changed `text` (a text as the store wrote it): every redaction and every cut leaves
 * its marker. A text that holds one unchanged answers yes too, which only costs a check by hash.
 */
export function maybeSanitized(text: string): boolean {
  return text.includes(REDACTED) || text.includes(CUT);
}

export function byteLength(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

export class Sanitizer {
  private readonly pattern: RegExp | null;
  /** The forms as they show inside a value's JSON, for isClean() (not global: test() on one keeps state). */
  private readonly probe: RegExp | null;
  private readonly names: Map<string, string>;
  /** The rules' probes, joined (one regex per set of flags): when none finds anything, no rule changes a text. */
  private readonly ruleProbes: RegExp[];

  constructor(
    secrets: Map<string, string>,
    readonly limits: SanitizeLimits = DEFAULT_LIMITS,
    private readonly rules: readonly RedactRule[] = BUILTIN_RULES,
  ) {
    // A secret may also appear JSON-escaped (inside a raw model response, say): redact that form too.
    this.names = new Map();
    for (const [value, name] of secrets) {
      this.names.set(value, name);
      const escaped = JSON.stringify(value).slice(1, -1);
      if (escaped !== value) this.names.set(escaped, name);
    }
    const alternatives = [...this.names.keys()].sort((a, b) => b.length - a.length).map(escapeRegExp);
    this.pattern = alternatives.length ? new RegExp(alternatives.join("|"), "g") : null;
    const inJson = [...new Set([...this.names.keys()].map((k) => JSON.stringify(k).slice(1, -1)))]
      .sort((a, b) => b.length - a.length)
      .map(escapeRegExp);
    this.probe = inJson.length ? new RegExp(inJson.join("|")) : null;
    const byFlags = new Map<string, string[]>();
    for (const r of rules)
      (byFlags.get(r.probe.flags) ?? byFlags.set(r.probe.flags, []).get(r.probe.flags)!).push(r.probe.source);
    this.ruleProbes = [...byFlags].map(([flags, sources]) => new RegExp(sources.join("|"), flags));
  }

  /** Redact, then cut to maxTextChars with a marker that names the full size. */
  text(value: string, maxChars: number = this.limits.maxTextChars): string {
    const clean = this.redact(value);
    if (clean.length <= maxChars) return clean;
    return `${clean.slice(0, maxChars)}${CUT}${byteLength(clean)} bytes in full]`;
  }

  optText(value: string | null | undefined): string | null {
    return value === null || value === undefined ? null : this.text(value);
  }

  redact(value: string): string {
    if (value.length < MIN_SECRET_LENGTH / 2) return value;
    let out = this.pattern
      ? value.replace(this.pattern, (m) => marker(this.names.get(m) ?? "secret"))
      : value;
    if (!this.ruleProbes.some((p) => p.test(out))) return out;
    for (const rule of this.rules) {
      if (rule.probe.test(out)) out = rule.apply(out);
    }
    return out;
  }

  /** Every string in a JSON-like value (keys included) passed through text(). */
  deep<T>(value: T): T {
    return this.walk(value) as T;
  }

  /** JSON of a value after deep(); undefined stays undefined (stored as NULL). */
  json(value: unknown): string | undefined {
    if (value === undefined) return undefined;
    return this.record(value).json;
  }

  /**
   * A JSON-like value after deep(), with its JSON. Most values hold no secret and no oversized string: those
   * are checked on their JSON in one scan and returned as they are (not copied: callers must not mutate).
   */
  record<T>(value: T): { value: T; json: string } {
    const json = JSON.stringify(value);
    if (this.isClean(json)) return { value, json };
    const clean = this.deep(value);
    return { value: clean, json: JSON.stringify(clean) };
  }

  /**
   * A step ready to store: deep() plus a cap on its result value and console lines. A result over
   * maxResultChars becomes `{ $truncated: { bytes, preview } }`; `resultBytes` is the full JSON size.
   * `json` is the stored step's JSON, `resultJson` its result value's (null when it has none).
   */
  step(step: Step): {
    step: Step;
    json: string;
    resultJson: string | null;
    resultBytes: number | null;
    truncated: boolean;
  } {
    const result = step.execution_result;
    if (!result) {
      const { value, json } = this.record(step);
      return { step: value, json, resultJson: null, resultBytes: null, truncated: false };
    }
    const fullJson = result.value === undefined ? "" : JSON.stringify(result.value);
    const resultBytes = byteLength(fullJson);
    if (fullJson.length <= this.limits.maxResultChars && result.logs.length <= this.limits.maxLogLines) {
      const json = JSON.stringify(step);
      if (this.isClean(json)) {
        const resultJson = result.value === undefined ? null : fullJson;
        return { step, json, resultJson, resultBytes, truncated: false };
      }
    }
    const clean = this.deep(step);
    const out = clean.execution_result!;
    let truncated = false;
    if (fullJson.length > this.limits.maxResultChars) {
      const preview = JSON.stringify(out.value).slice(0, this.limits.maxResultChars);
      out.value = { $truncated: { bytes: resultBytes, preview } };
      truncated = true;
    }
    if (out.logs.length > this.limits.maxLogLines) {
      const dropped = out.logs.length - this.limits.maxLogLines;
      out.logs = [...out.logs.slice(0, this.limits.maxLogLines), `…[${dropped} more lines not stored]`];
      truncated = true;
    }
    const resultJson = out.value === undefined ? null : JSON.stringify(out.value);
    return { step: clean, json: JSON.stringify(clean), resultJson, resultBytes, truncated };
  }

  /** A whole session ready to store as JSON: deep() with every step capped like step(). */
  session(session: AgentSession): AgentSession {
    const steps = session.steps.map((s) => this.step(s).step);
    return { ...this.record({ ...session, steps: [] }).value, steps };
  }

  /** JSON.stringify(session(s)), in one scan when nothing needs redacting or capping. */
  sessionJson(session: AgentSession): string {
    const json = JSON.stringify(session);
    // No step's result JSON (a part of this JSON) can be over the cap when the whole is not.
    const small = json.length <= this.limits.maxResultChars;
    const fewLogs = session.steps.every(
      (s) => (s.execution_result?.logs.length ?? 0) <= this.limits.maxLogLines,
    );
    if (small && fewLogs && this.isClean(json)) return json;
    return JSON.stringify(this.session(session));
  }

  /**
   * Whether deep() would leave a value unchanged, judged on its JSON: no string in it can be longer than
   * maxTextChars when the whole JSON is not, and JSON escaping is per character, so any string or key that
   * holds a form redact() looks for holds that form's JSON escape in the value's JSON, which `probe` finds.
   * The rules' probes use no character JSON escapes, so they find a rule's text in the JSON as well, and a
   * secret-named key with a string value (see walk()) shows as `name":` there.
   */
  private isClean(json: string): boolean {
    return (
      json.length <= this.limits.maxTextChars &&
      !this.probe?.test(json) &&
      !this.ruleProbes.some((p) => p.test(json))
    );
  }

  private walk(value: unknown): unknown {
    if (typeof value === "string") return this.text(value);
    if (Array.isArray(value)) return value.map((v) => this.walk(v));
    if (value && typeof value === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        // {"password": "…"}: the key says the value is secret, whatever it looks like.
        const clean = this.walk(v);
        const key = this.redact(k);
        out[key] = typeof clean === "string" && isSecretPair(k, clean) ? marker(key) : clean;
      }
      return out;
    }
    return value;
  }
}
