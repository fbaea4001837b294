import { describe, expect, it } from "vitest";
import { Finding, guardQuery, type FindingRule, type QueryGuardOptions } from "../index.js";

const existing = new Set(["/data/report.csv", "./notes.md", "~/todo.txt", "/home/ana/My Docs/plan.txt"]);
const exists = (p: string) => existing.has(p);

type Case = {
  name: string;
  text: string;
  options?: QueryGuardOptions;
  /** Rules that must fire (with the given severity), or [] for a clean query. */
  expect: Array<[FindingRule, "info" | "warn" | "block"]>;
};

const cases: Case[] = [
  // clean queries: nothing fires
  { name: "plain arithmetic", text: "What is 7 times 6?", expect: [] },
  {
    name: "valid https URL",
    text: "Summarise https://en.wikipedia.org/wiki/Tiger_(disambiguation).",
    expect: [],
  },
  { name: "localhost URL with port", text: "Fetch http://localhost:8080/health please", expect: [] },
  {
    name: "decimals and ratios are not URLs or paths",
    text: "Is 3.14 bigger than 22/7 in km/h terms?",
    expect: [],
  },
  { name: "file names are not domains", text: "Read index.html, main.rs and data.csv", expect: [] },
  { name: "e-mail is not a bare domain", text: "Write to ana@example.com about it", expect: [] },
  { name: "slash command is not a path", text: "type /help for the list", options: { exists }, expect: [] },
  {
    name: "existing paths",
    text: "Load /data/report.csv and ./notes.md and ~/todo.txt",
    options: { exists },
    expect: [],
  },
  {
    name: "quoted path with spaces exists",
    text: 'Open "/home/ana/My Docs/plan.txt"',
    options: { exists },
    expect: [],
  },
  // url syntax
  { name: "host without TLD", text: "Open https://example/page", expect: [["query.url_syntax", "warn"]] },
  {
    name: "unparseable URL",
    text: "Fetch http://example.com:99999/x",
    expect: [["query.url_syntax", "warn"]],
  },
  {
    name: "host with underscore",
    text: "Fetch https://bad_host.example.com/x",
    expect: [["query.url_syntax", "warn"]],
  },
  { name: "mistyped scheme", text: "Fetch htps://example.com/a", expect: [["query.url_syntax", "warn"]] },
  {
    name: "scheme missing a slash",
    text: "Fetch http:/example.com/a now",
    expect: [["query.url_syntax", "warn"]],
  },
  {
    name: "scheme missing the colon",
    text: "Fetch https//example.com/a now",
    expect: [["query.url_syntax", "warn"]],
  },
  // protocol-less URLs
  {
    name: "www address",
    text: "Summarise www.example.org/news",
    expect: [["query.url_no_protocol", "info"]],
  },
  {
    name: "bare domain",
    text: "What does python.org say about 3.13?",
    expect: [["query.url_no_protocol", "info"]],
  },
  // missing files
  {
    name: "missing absolute path",
    text: "Summarise /data/missing.csv.",
    options: { exists },
    expect: [["query.file_missing", "warn"]],
  },
  {
    name: "missing relative path",
    text: "Read ../secret/notes.md",
    options: { exists },
    expect: [["query.file_missing", "warn"]],
  },
  {
    name: "missing windows path",
    text: "Open C:\\Users\\ana\\x.docx",
    options: { exists },
    expect: [["query.file_missing", "warn"]],
  },
  { name: "missing file without exists(): skipped", text: "Summarise /data/missing.csv.", expect: [] },
  // length and repetition
  {
    name: "overlong query",
    text: "word ".repeat(500),
    options: { maxChars: 1000 },
    expect: [
      ["query.overlong", "warn"],
      ["query.long_sentence", "warn"],
      ["query.repetitive", "warn"],
    ],
  },
  {
    name: "query over the hard limit",
    text: "ab ".repeat(10),
    options: { maxChars: 10, hardMaxChars: 20 },
    expect: [
      ["query.overlong", "block"],
      ["query.repetitive", "warn"],
    ],
  },
  {
    name: "run-on sentence",
    text: Array.from({ length: 70 }, (_, i) => `w${i}`).join(" ") + ".",
    expect: [["query.long_sentence", "warn"]],
  },
  {
    name: "repeated sentence",
    text: "Add two and three. Then stop. Add two and three.",
    expect: [["query.repetitive", "warn"]],
  },
  {
    name: "stuttered word",
    text: "please please please please add 1 and 2",
    expect: [["query.repetitive", "warn"]],
  },
  { name: "held key", text: "add 1 and 2 !!!!!!!!!!!!!!!!!!!!!!!!!", expect: [["query.repetitive", "warn"]] },
  // empty
  { name: "empty", text: "   \n ", expect: [["query.empty", "block"]] },
];

describe("guardQuery rules", () => {
  it.each(cases)("$name", ({ text, options, expect: want }) => {
    const r = guardQuery(text, options);
    for (const f of r.findings) Finding.parse(f);
    const got = r.findings.map((f) => [f.rule, f.severity]);
    for (const w of want) expect(got).toContainEqual(w);
    const wantedRules = new Set(want.map(([rule]) => rule));
    expect(r.findings.filter((f) => !wantedRules.has(f.rule))).toEqual([]);
    expect(r.blocking).toBe(want.some(([, s]) => s === "block"));
  });
});

describe("guardQuery details", () => {
  it("suggests the https:// form for protocol-less and broken URLs", () => {
    const bare = guardQuery("Summarise www.example.org/news.").findings[0];
    expect(bare?.suggestions).toEqual(["https://www.example.org/news"]);
    expect(bare?.span).toEqual({ start: 10, end: 30 });
    expect(guardQuery("see htps://example.com").findings[0]?.suggestions).toEqual(["https://example.com"]);
    expect(guardQuery("see https//example.com/a").findings[0]?.suggestions).toEqual([
      "https://example.com/a",
    ]);
  });

  it("spans point at the offending text", () => {
    const text = "Read /nope/a.txt now";
    const f = guardQuery(text, { exists }).findings[0]!;
    expect(text.slice(f.span!.start, f.span!.end)).toBe("/nope/a.txt");
    expect(f.message).toContain("/nope/a.txt");
  });

  it("asks exists() once per distinct path and never for URLs", () => {
    const asked: string[] = [];
    guardQuery("Compare /a/b.txt with /a/b.txt and https://x.org/c/d.txt", {
      exists: (p) => (asked.push(p), true),
    });
    expect(asked).toEqual(["/a/b.txt"]);
  });

  it("blocklist: removes, says what was removed, and never rewrites silently", () => {
    const r = guardQuery("Tell me a Damn joke, damn it, but not damnation", { blocklist: ["damn"] });
    expect(r.sanitized).toBe("Tell me a [removed] joke, [removed] it, but not damnation");
    expect(r.blocking).toBe(false);
    expect(r.findings).toHaveLength(1);
    expect(r.findings[0]).toMatchObject({
      rule: "query.blocklist",
      severity: "warn",
      span: { start: 10, end: 14 },
    });
    expect(r.findings[0]!.message).toContain('"damn" (2 times)');
  });

  it("blocklist: custom replacement, phrases over any whitespace, block action", () => {
    const r = guardQuery("please rm  -rf the folder", {
      blocklist: [
        { term: "rm -rf", replacement: "delete" },
        { term: "forbidden topic", action: "block" },
      ],
    });
    expect(r.sanitized).toBe("please delete the folder");
    const blocked = guardQuery("Talk about the Forbidden   Topic now", {
      blocklist: [{ term: "forbidden topic", action: "block" }],
    });
    expect(blocked.blocking).toBe(true);
    expect(blocked.sanitized).toBe("Talk about the Forbidden   Topic now");
    expect(blocked.findings[0]).toMatchObject({ rule: "query.blocklist", severity: "block" });
  });

  it("without findings the sanitised text is the input", () => {
    const text = "What is 7 times 6?";
    expect(guardQuery(text, { blocklist: ["damn"] })).toEqual({
      findings: [],
      blocking: false,
      sanitized: text,
    });
  });
});
