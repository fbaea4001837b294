/**
 * Pattern-based redaction: secrets recognised by their shape (well-known key formats, private keys, JWTs,
 * passwords in URLs) or by the name next to them (`password=…`, `DB_PASS=…`, `"api_key": "…"`), plus extra
 * patterns from the config. The Sanitizer runs these after the literal secrets it collected from the
 * environment.
 *
 * Each rule also has a `probe`: a regex that finds the rule's text in a string AND in that string's JSON form
 * (it uses no character JSON escapes), so the Sanitizer can pass a whole value's JSON over in one scan.
 * Probes are written to be fast over long texts where they find nothing (the usual case): no `\b`, and a
 * single character to look for first where a rule starts with a list of words (lookbehind).
 */

/** A recognised secret's shape: `apply` returns the text with each one replaced by a marker. */
export interface RedactRule {
  name: string;
  probe: RegExp;
  apply: (text: string) => string;
}

/** What every redaction leaves in a text (marker below), and nothing else of the sanitizer's does. */
export const REDACTED = "[REDACTED:";
export const marker = (name: string): string => `${REDACTED}${name}]`;

/** Token characters: what API keys, JWT parts and similar secrets are made of. */
const TOKEN_CHARS = "A-Za-z0-9_\\-./+=~";
const TOKEN = new RegExp(`^[${TOKEN_CHARS}]{16,}$`);

/** A secret-looking word: long, made of token characters, with both letters and digits (not a word or a count). */
export function looksLikeToken(value: string): boolean {
  return TOKEN.test(value) && /[0-9]/.test(value) && /[A-Za-z]/.test(value);
}

// Names whose value is a secret whatever it looks like, and names whose value is one if it looks like a token.
// Both match the END of a name, so `passed`, `bypass`, `input_tokens` and `monkey` are not secret names.
const PASSWORD_NAME = /(?:password|passwd|passphrase|secret|credentials?|(?:^|[_.-])(?:pass|pwd))$/i;
const TOKEN_NAME =
  /(?:token|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|auth|authorization|(?:^|[_.-])(?:key|pat))$/i;
/** The end of a secret name followed by `=` or `:`, in a text or a JSON key: the probe of the name rules. */
const NAME_PROBE =
  /[:=](?<=(?:pass|passwd|password|passphrase|pwd|secret|credentials?|token|key|auth|authorization|pat)\\*["']?(?:\s|\\[tnr])*[:=])/i;

/** Whether the value under a name (a JSON key, an assignment) is to be redacted. */
export function isSecretPair(name: string, value: string): boolean {
  if (value.length === 0 || value.startsWith(REDACTED)) return false;
  if (PASSWORD_NAME.test(name)) return true;
  return TOKEN_NAME.test(name) && looksLikeToken(value);
}

/** A rule whose every match is a secret. The probe defaults to the pattern without its `\b`s. */
const fixed = (name: string, source: string, probe = source.replaceAll("\\b", "")): RedactRule => ({
  name,
  probe: new RegExp(probe),
  apply: (text) => text.replace(new RegExp(source, "g"), marker(name)),
});

/**
 * name=value pairs. The value is only looked at (lookahead), so when it is not secret the scan goes on inside
 * it: in `"code":"db_password: x"` the value of `code` holds the pair to redact.
 */
const PAIR = /([A-Za-z_][\w.-]*)(\\*["']?\s*[:=]\s*\\*["']?)(?=([^\s"'\\,;&()[\]{}<>]+))/g;

function redactPairs(text: string): string {
  const re = new RegExp(PAIR);
  let out = "";
  let done = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const [head, name, between, value] = m as unknown as [string, string, string, string];
    if (!isSecretPair(name, value)) continue;
    out += `${text.slice(done, m.index)}${name}${between}${marker(name)}`;
    done = re.lastIndex = m.index + head.length + value.length;
  }
  return done === 0 ? text : out + text.slice(done);
}

/** The built-in rules, most specific first (a key format wins over the name next to it). */
export const BUILTIN_RULES: readonly RedactRule[] = [
  fixed(
    "private_key",
    // To the END line, or to the end of the text when it was cut before it.
    "-----BEGIN[A-Z ]{0,40} PRIVATE KEY-----[\\s\\S]*?(?:-----END[A-Z ]{0,40} PRIVATE KEY-----|$)",
    "-----BEGIN[A-Z ]{0,40} PRIVATE KEY-----",
  ),
  fixed("anthropic_key", "\\bsk-ant-[A-Za-z0-9_-]{20,}"),
  fixed("openai_key", "\\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
  fixed("stripe_key", "\\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
  fixed("github_token", "\\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
  fixed("gitlab_token", "\\bglpat-[A-Za-z0-9_-]{20,}"),
  fixed("aws_access_key", "\\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\\b"),
  fixed("slack_token", "\\bxox[abposr]-[A-Za-z0-9-]{10,}"),
  fixed("google_api_key", "\\bAIza[0-9A-Za-z_-]{35}"),
  fixed("jwt", "\\beyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}"),
  {
    name: "bearer",
    probe: new RegExp(`Bearer\\s+[${TOKEN_CHARS}]{16,}`, "i"),
    apply: (text) =>
      text.replace(new RegExp(`\\b(Bearer\\s+)[${TOKEN_CHARS}]{16,}`, "gi"), `$1${marker("bearer")}`),
  },
  {
    // scheme://user:password@host: the password goes, the user and host stay (they say which service).
    name: "url_password",
    probe: /:\/\/[^\s:/?#@"'\\]+:[^\s/?#@"'\\]+@/,
    apply: (text) =>
      text.replace(/\b([a-z][a-z0-9+.-]*:\/\/[^\s:/?#@"'\\]+):([^\s/?#@"'\\]+)@/gi, (m, prefix, password) =>
        (password as string).startsWith(REDACTED) ? m : `${prefix}:${marker("url_password")}@`,
      ),
  },
  {
    // name=value, name: value, "name": "value", also JSON-escaped inside a text (\"name\": \"value\"), at any depth.
    name: "secret_pair",
    probe: NAME_PROBE,
    apply: redactPairs,
  },
];

/** Compile extra patterns from the config (`redact:` in profiles.yaml); each match becomes [REDACTED:pattern]. */
export function extraRules(patterns: readonly string[]): RedactRule[] {
  return patterns.map((source) => fixed("pattern", source, source));
}
