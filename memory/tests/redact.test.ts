import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SessionStore } from "../index.js";
import { BUILTIN_RULES, extraRules } from "../redact.js";
import { Sanitizer, collectSecrets } from "../sanitize.js";
import { simulateSession } from "./simulate.js";

/** Each secret, in a text the way it turns up: a query, a tool argument, a log line, a model's reply. */
const SAMPLES: Array<{ name: string; secret: string; text: string; marker: string }> = [
  [
    "openai_key",
    "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "call with sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z now",
  ],
  ["openai_key", "sk-Qm7Rt2Vx9Zb4Nc6Hd8Kp3Jf5Lw1Sy0Ue", 'OPENAI="sk-Qm7Rt2Vx9Zb4Nc6Hd8Kp3Jf5Lw1Sy0Ue"'],
  [
    "anthropic_key",
    "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
    "key sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe.",
  ],
  [
    "github_token",
    "ghp_R4nd0mT0k3nV4lu3Xq7Lm9Tz2Wv5Rb8Nc4Hd",
    "git clone https://ghp_R4nd0mT0k3nV4lu3Xq7Lm9Tz2Wv5Rb8Nc4Hd@github.com/a/b",
  ],
  [
    "github_token",
    "gho_8Kp3Jf1Xq7Lm9Tz2Wv5Rb8Nc4Hd6Kp3Jf1Ab2",
    "oauth gho_8Kp3Jf1Xq7Lm9Tz2Wv5Rb8Nc4Hd6Kp3Jf1Ab2",
  ],
  [
    "github_token",
    "github_pat_11ABCDEFG0Xq7Lm9Tz2Wv5_Rb8Nc4Hd6Kp3Jf1Xq7Lm9Tz2Wv5Rb8Nc4Hd6Kp3Jf1Xq7Lm9Tz2W",
    "GH: github_pat_11ABCDEFG0Xq7Lm9Tz2Wv5_Rb8Nc4Hd6Kp3Jf1Xq7Lm9Tz2Wv5Rb8Nc4Hd6Kp3Jf1Xq7Lm9Tz2W",
  ],
  ["aws_access_key", "AKIAZ7QW3ER5TY6UI8OP", "aws_access_key_id = AKIAZ7QW3ER5TY6UI8OP"],
  [
    "slack_token",
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
  ],
  [
    "google_api_key",
    "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
    "maps?key2=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW&x=1",
  ],
  [
    "private_key",
    "MIIEpAIBAAKCAQEA7qZ9xVb2LwQq8Tz",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7qZ9xVb2LwQq8Tz\nK3j9+abc/def=\n-----END RSA PRIVATE KEY-----\nafter",
  ],
  [
    "jwt",
    "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
  ],
  ["bearer", "Zq9Vw8Ut7Sr6Qp5On4Ml3", "Authorization: Bearer Zq9Vw8Ut7Sr6Qp5On4Ml3"],
  ["url_password", "Pg5ecretPw9x", "connect to postgres://admin:Pg5ecretPw9x@db.internal:5432/app"],
  ["password", "Tr0ub4dorXq", "login with password=Tr0ub4dorXq please"],
  ["DB_PASS", "Zk8mW2qLpV", "export DB_PASS=Zk8mW2qLpV"],
  ["password", "Qw7erTyUiOp", 'await login({"user": "bob", "password": "Qw7erTyUiOp"})'],
  ["db_password", "Lk4jH6gF8dS", "db_password: Lk4jH6gF8dS"],
  [
    "api_key",
    "a8f9c3e1b7d24f6a9c0e5b3d1f7a2c4e",
    'fetch(url, { api_key: "a8f9c3e1b7d24f6a9c0e5b3d1f7a2c4e" })',
  ],
  ["GH_PAT", "Yt6Re4Wq2Az1Sx3Dc5", "GH_PAT=Yt6Re4Wq2Az1Sx3Dc5"],
].map(([name, secret, text]) => ({
  name: name!,
  secret: secret!,
  text: text!,
  marker: `[REDACTED:${name}]`,
}));

/** Text a user needs back as it is: words, counts, hashes not next to a secret-like name, plain URLs. */
const ORDINARY = [
  "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
  "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
  "id 123e4567-e89b-12d3-a456-426614174000",
  "input_tokens: 1500, output_tokens=300, max_tokens: 4096",
  "bypass: on; passed: 3; monkey=banana; key: value; author: Ada",
  "see https://example.com/a:b@c and mail bob@example.com or http://host:8080/path",
  "the task-force ask-questions-about-everything-today", // "sk-" inside a word
  "token: abc (too short and a word)",
  "password reset link sent", // no value after a delimiter
  "AKIA is a prefix; eyJ alone is not a token",
];

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-redact-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Every cell of every table (FTS shadow tables included), then the raw file after a checkpoint. */
function storedText(s: SessionStore, path: string): { cells: string[]; file: string } {
  const cells: string[] = [];
  const tables = s.db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
    .pluck()
    .all() as string[];
  for (const t of tables) {
    for (const row of s.db.prepare(`SELECT * FROM "${t}"`).raw().all() as unknown[][]) {
      for (const v of row) cells.push(Buffer.isBuffer(v) ? v.toString("latin1") : String(v));
    }
  }
  s.db.pragma("wal_checkpoint(TRUNCATE)");
  return { cells, file: readFileSync(path).toString("latin1") };
}

/** Write `text` into every place the store keeps or indexes text, as the loop would. */
function writeEverywhere(s: SessionStore, id: string, text: string): void {
  simulateSession(s, { id, query: `q ${text}`, steps: 2, marker: text, failingTools: [1], humanAfter: 0 });
  s.recordLlmCall(id, {
    role: "decision",
    provider: "p",
    model: "m",
    ok: true,
    input_tokens: 1,
    output_tokens: 1,
    latency_ms: 1,
    attempts: 1,
    prompt: `## History\n${text}`,
    raw_response: JSON.stringify({ code: text }),
    value: { code: text, args: { note: text } },
    started_at: new Date().toISOString(),
  });
  s.recordServerLog(id, {
    server: "db",
    level: "info",
    message: `connected: ${text}`,
    at: new Date().toISOString(),
  });
  s.recordServerLog(null, { server: "db", level: "info", message: text, at: new Date().toISOString() });
}

describe("redaction by pattern", () => {
  it("keeps each well-known secret out of every table, the search index and the file", () => {
    const path = join(dir, "p.db");
    const s = SessionStore.open(path, { env: {} });
    try {
      SAMPLES.forEach((x, i) => writeEverywhere(s, `s${i}`, x.text));
      const { cells, file } = storedText(s, path);
      const all = cells.join("\n");
      const around = (text: string, part: string) => {
        const at = text.indexOf(part);
        return at < 0 ? null : text.slice(Math.max(0, at - 60), at + part.length + 20);
      };
      for (const x of SAMPLES) {
        const leak = cells.findIndex((c) => c.includes(x.secret));
        expect(leak < 0 ? null : `cell ${leak}: ${around(cells[leak]!, x.secret)}`, x.name).toBeNull();
        // The search index keeps words, lower-cased: not even the secret's longest word may be there.
        const word = x.secret
          .match(/[A-Za-z0-9]+/g)!
          .sort((a, b) => b.length - a.length)[0]!
          .toLowerCase();
        expect(around(file.toLowerCase(), word), `${x.name}: ${word}`).toBeNull();
        expect(all, x.name).toContain(x.marker);
      }
      // Readers get the redacted text back; what is around a secret stays.
      const got = s.getSession("s12");
      expect(got.original_query).toBe(
        "q connect to postgres://admin:[REDACTED:url_password]@db.internal:5432/app",
      );
      expect(s.llmCalls("s15").at(-1)!.value).toEqual({
        code: 'await login({"user": "bob", "password": "[REDACTED:password]"})',
        args: { note: 'await login({"user": "bob", "password": "[REDACTED:password]"})' },
      });
      // A person answered in these sessions: memory recalls one only once they said it may.
      s.rememberHumanAnswers("s12");
      expect(s.searchMemory("connect postgres admin", { threshold: 0.1 })[0]?.session_id).toBe("s12");
    } finally {
      s.close();
    }
  });

  it("redacts the value under a secret-like key of a tool's arguments or result, whatever it looks like", () => {
    const s = SessionStore.open(join(dir, "k.db"), { env: {} });
    try {
      s.recordLlmCall((simulateSession(s, { id: "k", query: "q", steps: 1 }), "k"), {
        role: "decision",
        provider: "p",
        model: "m",
        ok: true,
        input_tokens: 1,
        output_tokens: 1,
        latency_ms: 1,
        attempts: 1,
        prompt: "p",
        raw_response: "{}",
        value: {
          password: "pw",
          dbPassword: "x y z",
          GH_PAT: "Yt6Re4Wq2Az1Sx3Dc5",
          token: "short",
          input_tokens: "1500",
          key: "k",
        },
        started_at: new Date().toISOString(),
      });
      expect(s.llmCalls("k").at(-1)!.value).toEqual({
        password: "[REDACTED:password]",
        dbPassword: "[REDACTED:dbPassword]",
        GH_PAT: "[REDACTED:GH_PAT]",
        token: "short", // not token-like: kept
        input_tokens: "1500",
        key: "k",
      });
    } finally {
      s.close();
    }
  });

  it("leaves ordinary text, hashes and URLs without passwords as they are", () => {
    const s = SessionStore.open(join(dir, "o.db"), { env: {} });
    try {
      const text = ORDINARY.join("\n");
      const written = simulateSession(s, { id: "o", query: text, steps: 1, marker: text });
      const got = s.getSession("o");
      expect(got).toEqual(written);
      expect(JSON.stringify(got)).not.toContain("REDACTED");
      for (const line of ORDINARY) expect(s.redact(line)).toBe(line);
    } finally {
      s.close();
    }
  });

  it("takes configured patterns, and finds every form a fast check could miss", () => {
    const clean = new Sanitizer(new Map(), undefined, [...BUILTIN_RULES, ...extraRules(["ACME-[0-9]{6}"])]);
    expect(clean.redact("order ACME-123456 shipped")).toBe("order [REDACTED:pattern] shipped");
    // Values whose JSON differs from their text (escapes): the one-scan check must still see the secret.
    const values: unknown[] = [
      ...SAMPLES.map((x) => ({ raw: JSON.stringify({ nested: x.text }) })),
      ...SAMPLES.map((x) => [x.text, { [x.name]: x.secret }]),
      { note: "ACME-654321" },
      { "pass\tword": 1, text: "password\t: tab-separated" },
      ORDINARY,
    ];
    for (const v of values) expect(clean.record(v).json).toBe(JSON.stringify(clean.deep(v)));
    for (const x of SAMPLES) {
      expect(clean.record({ raw: JSON.stringify({ nested: x.text }) }).json, x.name).not.toContain(x.secret);
    }
    // Text with no word any rule starts from is passed over in one scan, not copied.
    const plain = ORDINARY.slice(0, 4);
    expect(clean.record(plain).value).toBe(plain);
  });
});

describe("secrets from the environment", () => {
  it("takes DB_PASS, GH_PAT and the password of a URL-valued variable, not PATH or a plain URL", () => {
    const secrets = collectSecrets({
      DB_PASS: "pw-Zk8mW2",
      GH_PAT: "Yt6Re4Wq2Az1Sx3Dc5",
      DATABASE_URL: "postgres://app:s3cr3tPw@db:5432/app",
      REDIS_URL: "redis://cache:6379",
      PATH: "/usr/local/bin:/usr/bin",
      PASSENGER_COUNT: "12345678",
    });
    expect([...secrets].sort()).toEqual(
      [
        ["pw-Zk8mW2", "DB_PASS"],
        ["Yt6Re4Wq2Az1Sx3Dc5", "GH_PAT"],
        ["postgres://app:s3cr3tPw@db:5432/app", "DATABASE_URL"],
        ["s3cr3tPw", "DATABASE_URL"],
      ].sort(),
    );
    const s = SessionStore.open(join(dir, "e.db"), { env: { DATABASE_URL: "mysql://u:Wq2Az1Sx3@h/db" } });
    try {
      // The password alone, with no URL around it, is still known.
      expect(s.redact("it failed with Wq2Az1Sx3")).toBe("it failed with [REDACTED:DATABASE_URL]");
    } finally {
      s.close();
    }
  });
});

describe("the database file", () => {
  const mode = (p: string) => statSync(p).mode & 0o777;

  it("is created 0600 with its -wal and -shm files, in a shared folder and whatever the umask", () => {
    const shared = join(dir, "shared");
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    const old = process.umask(0);
    let s: SessionStore | undefined;
    try {
      const path = join(shared, "pda.db");
      s = SessionStore.open(path);
      simulateSession(s, { id: "p", query: "q", steps: 1, noFinish: true });
      for (const f of [path, `${path}-wal`, `${path}-shm`]) {
        expect(existsSync(f), f).toBe(true);
        expect(mode(f).toString(8), f).toBe("600");
      }
      // Folders the store makes for itself are private too.
      const nested = join(shared, "a", "b", "pda.db");
      SessionStore.open(nested).close();
      expect(mode(join(shared, "a")).toString(8)).toBe("700");
    } finally {
      process.umask(old);
      s?.close();
    }
  });

  it("leaves an existing file others can read as it is, and says so once to a writer", async () => {
    const path = join(dir, "old.db");
    SessionStore.open(path).close();
    chmodSync(path, 0o644);
    const warnings: Error[] = [];
    const listen = (w: Error) => warnings.push(w);
    process.on("warning", listen);
    try {
      SessionStore.open(path, { mustExist: true }).close(); // a reader: nothing said
      SessionStore.open(path).close();
      SessionStore.open(path).close();
      await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
    } finally {
      process.off("warning", listen);
    }
    expect(mode(path).toString(8)).toBe("644");
    const ours = warnings.filter((w) => (w as { code?: string }).code === "PDA_STORE_PERMISSIONS");
    expect(ours).toHaveLength(1);
    expect(ours[0]!.message).toContain(path);
    expect(ours[0]!.message).toContain("mode 644");
  });
});
