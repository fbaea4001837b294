/**
 * What the store does to every value before it is written: secret values are replaced by a marker and
 * oversized text is cut, with the full size kept beside it. Applied at write, so nothing secret or huge
 * reaches the file (or its WAL) in the first place.
 */

import type { AgentSession, Step } from "../core/index.js";

/** Environment variable names whose values are treated as secrets. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL/i;
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
    if (value && value.length >= MIN_SECRET_LENGTH && SECRET_NAME.test(name)) secrets.set(value, name);
  }
  for (const value of extra) {
    if (value && value.length >= 4) secrets.set(value, "configured");
  }
  return secrets;
}

export function byteLength(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

export class Sanitizer {
  private readonly pattern: RegExp | null;
  private readonly names: Map<string, string>;

  constructor(
    secrets: Map<string, string>,
    readonly limits: SanitizeLimits = DEFAULT_LIMITS,
  ) {
    // A secret may also appear JSON-escaped (inside a raw model response, say): redact that form too.
    this.names = new Map();
    for (const [value, name] of secrets) {
      this.names.set(value, name);
      const escaped = JSON.stringify(value).slice(1, -1);
      if (escaped !== value) this.names.set(escaped, name);
    }
    const alternatives = [...this.names.keys()]
      .sort((a, b) => b.length - a.length)
      .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    this.pattern = alternatives.length ? new RegExp(alternatives.join("|"), "g") : null;
  }

  /** Redact, then cut to maxTextChars with a marker that names the full size. */
  text(value: string, maxChars: number = this.limits.maxTextChars): string {
    const clean = this.redact(value);
    if (clean.length <= maxChars) return clean;
    return `${clean.slice(0, maxChars)}…[truncated: ${byteLength(clean)} bytes in full]`;
  }

  optText(value: string | null | undefined): string | null {
    return value === null || value === undefined ? null : this.text(value);
  }

  redact(value: string): string {
    if (!this.pattern || value.length < MIN_SECRET_LENGTH / 2) return value;
    return value.replace(this.pattern, (m) => `[REDACTED:${this.names.get(m) ?? "secret"}]`);
  }

  /** Every string in a JSON-like value (keys included) passed through text(). */
  deep<T>(value: T): T {
    return this.walk(value) as T;
  }

  /** JSON of a value after deep(); undefined stays undefined (stored as NULL). */
  json(value: unknown): string | undefined {
    if (value === undefined) return undefined;
    return JSON.stringify(this.deep(value));
  }

  /**
   * A step ready to store: deep() plus a cap on its result value and console lines. A result over
   * maxResultChars becomes `{ $truncated: { bytes, preview } }`; `resultBytes` is the full JSON size.
   */
  step(step: Step): { step: Step; resultBytes: number | null; truncated: boolean } {
    const result = step.execution_result;
    if (!result) return { step: this.deep(step), resultBytes: null, truncated: false };
    const fullJson = result.value === undefined ? "" : JSON.stringify(result.value);
    const resultBytes = byteLength(fullJson);
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
    return { step: clean, resultBytes, truncated };
  }

  /** A whole session ready to store as JSON: deep() with every step capped like step(). */
  session(session: AgentSession): AgentSession {
    const steps = session.steps.map((s) => this.step(s).step);
    return { ...this.deep({ ...session, steps: [] }), steps };
  }

  private walk(value: unknown): unknown {
    if (typeof value === "string") return this.text(value);
    if (Array.isArray(value)) return value.map((v) => this.walk(v));
    if (value && typeof value === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[this.redact(k)] = this.walk(v);
      return out;
    }
    return value;
  }
}
