import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Clock } from "../../core/index.js";
import { MemoryHit, SessionStore } from "../index.js";
import { simulateSession } from "./simulate.js";

const NOW = Date.parse("2025-03-01T12:00:00Z");
const clock: Clock = {
  now: () => NOW,
  iso: () => new Date(NOW).toISOString(),
  sleep: async () => {},
};
const daysAgo = (d: number) => () => new Date(NOW - d * 86_400_000).toISOString();

let dir: string;
let store: SessionStore;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-search-"));
  store = SessionStore.open(join(dir, "pda.db"), { clock });
  const add = (id: string, query: string, extra: Partial<Parameters<typeof simulateSession>[1]> = {}) =>
    simulateSession(store, { id, query, steps: 1, now: daysAgo(10), ...extra });
  add("fact", "What is the factorial of 5 plus 3?", { finalAnswer: "123" });
  add("usd", "Convert 100 US dollars to euros with the currency tool", { finalAnswer: "92 EUR" });
  add("doc", "Summarize the quarterly report in report.pdf", { finalAnswer: "Revenue grew." });
  add("cube", "Move the red cube onto the blue plate", { finalAnswer: "done" });
  add("weather", "Fetch the weather forecast for Paris", {
    status: "failed",
    statusReason: "the weather server timed out",
  });
  add("budget", "Plan a trip itinerary for Rome", { status: "budget_exhausted" });
  add("running", "Fetch the weather forecast for Lyon", { noFinish: true });
  // Different answers, so the two are not merged as identical hits.
  add("old", "Sum the ASCII values of the characters in INDIA", { now: daysAgo(400), finalAnswer: "377" });
  add("new", "Sum the ASCII values of the characters in INDIA", { now: daysAgo(1), finalAnswer: "378" });
  for (let i = 0; i < 30; i++) add(`filler${i}`, `Compute ${i} times ${i + 2} then add ${i * 3}`);
});
afterAll(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("memory search", () => {
  it("finds the same question as a solution with full relevance", () => {
    const hits = store.searchMemory("what is the factorial of 5 plus 3");
    expect(hits[0]).toMatchObject({
      session_id: "fact",
      kind: "solution",
      status: "succeeded",
      final_answer: "123",
    });
    expect(hits[0]!.relevance).toBe(1);
    expect(hits[0]!.reason).toBeNull();
    for (const h of hits) MemoryHit.parse(h);
  });

  it("matches word forms (stemming) and a different instance of the same task", () => {
    expect(store.searchMemory("moving cubes onto plates")[0]?.session_id).toBe("cube");
    const seven = store.searchMemory("factorial of 7");
    expect(seven[0]?.session_id).toBe("fact");
    expect(seven[0]!.relevance).toBeGreaterThan(0.5);
    expect(seven[0]!.relevance).toBeLessThan(1);
    expect(seven[0]!.matched_terms).toEqual(["factori"]);
  });

  it("returns failed sessions as warnings with why they failed", () => {
    const hits = store.searchMemory("weather forecast in Paris");
    expect(hits[0]).toMatchObject({
      session_id: "weather",
      kind: "warning",
      status: "failed",
      reason: "tried and failed because the weather server timed out",
    });
    const budget = store.searchMemory("trip itinerary Rome");
    expect(budget[0]).toMatchObject({ session_id: "budget", kind: "warning" });
    expect(budget[0]!.reason).toMatch(/^tried and failed because /);
    expect(store.searchMemory("weather forecast in Paris", { warnings: false })).toEqual([]);
  });

  it("leaves out sessions that have not ended (running or interrupted)", () => {
    expect(store.searchMemory("weather forecast Lyon").map((h) => h.session_id)).not.toContain("running");
  });

  it("returns nothing for unrelated text, only stopwords, or words never seen", () => {
    expect(store.searchMemory("bake a chocolate cake")).toEqual([]);
    expect(store.searchMemory("what is the")).toEqual([]);
    expect(store.searchMemory("")).toEqual([]);
  });

  it("applies the relevance threshold", () => {
    const loose = store.searchMemory("convert dollars to yen", { threshold: 0.3 });
    expect(loose[0]?.session_id).toBe("usd");
    expect(loose[0]!.relevance).toBeLessThan(0.9);
    expect(store.searchMemory("convert dollars to yen", { threshold: 0.9 })).toEqual([]);
    const all = store.searchMemory("compute times add", { threshold: 0, limit: 50 });
    expect(all.length).toBeGreaterThan(5);
    expect(all.every((h) => h.relevance >= 0)).toBe(true);
    expect(store.searchMemory("compute times add", { limit: 3 })).toHaveLength(3);
  });

  it("ranks the more recent of two equally relevant sessions first", () => {
    const hits = store.searchMemory("sum the ASCII values of the characters in INDIA");
    expect(hits.map((h) => h.session_id).slice(0, 2)).toEqual(["new", "old"]);
    expect(hits[0]!.relevance).toBe(hits[1]!.relevance);
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
    expect(hits[0]!.score / hits[0]!.relevance).toBeLessThanOrEqual(1.1); // the boost stays small
  });

  it("weighs rare words over common ones", () => {
    // "add" is in 30 filler sessions, "factorial" in one: a query with both prefers the factorial one.
    const hits = store.searchMemory("add the factorial", { threshold: 0 });
    expect(hits[0]?.session_id).toBe("fact");
    expect(hits[0]!.relevance).toBeGreaterThan(0.85);
    // A query of common words alone still finds the sessions that have them.
    const common = store.searchMemory("add", { limit: 50 });
    expect(common).toHaveLength(30);
    expect(common.every((h) => h.session_id.startsWith("filler"))).toBe(true);
  });
});

describe("memory scope", () => {
  let scoped: SessionStore;
  let scopedDir: string;
  const add = (id: string, query: string, extra: Partial<Parameters<typeof simulateSession>[1]> = {}) =>
    simulateSession(scoped, { id, query, steps: 1, now: daysAgo(10), ...extra });
  beforeAll(() => {
    scopedDir = mkdtempSync(join(tmpdir(), "pda-scope-"));
    scoped = SessionStore.open(join(scopedDir, "pda.db"), { clock });
  });
  afterAll(() => {
    scoped.close();
    rmSync(scopedDir, { recursive: true, force: true });
  });
  const ids = (text: string, options = {}) => scoped.searchMemory(text, options).map((h) => h.session_id);

  it("before: only sessions created before the time (a batch run's start), never the run's own", () => {
    add("earlier", "Multiply 17 by 23 with the calculator", { now: daysAgo(3), finalAnswer: "391" });
    add("during", "Multiply 17 by 23 with the calculator", { now: daysAgo(1), finalAnswer: "392" });
    expect(ids("multiply 17 by 23")).toEqual(["during", "earlier"]);
    expect(ids("multiply 17 by 23", { before: daysAgo(2)() })).toEqual(["earlier"]);
    expect(ids("multiply 17 by 23", { before: daysAgo(5)() })).toEqual([]);
  });

  it("leaves out sessions that never reached a model, and replays", () => {
    add("nomodel", "Translate the greeting into Klingon", { status: "failed", noModel: true });
    add("replayed", "Translate the greeting into Klingon", { provider: "replay", finalAnswer: "nuqneH" });
    expect(ids("translate the greeting into klingon")).toEqual([]);
    add("real", "Translate the greeting into Klingon", { finalAnswer: "nuqneH" });
    expect(ids("translate the greeting into klingon")).toEqual(["real"]);
  });

  it("leaves out a session a person answered in, until the person says it may be remembered", () => {
    add("secret", "Add 1000 to my secret number", { humanAfter: 0, finalAnswer: "1042" });
    expect(ids("add 1000 to my secret number")).toEqual([]);
    expect(scoped.rememberHumanAnswers("secr")).toBe("secret");
    expect(ids("add 1000 to my secret number")).toEqual(["secret"]);
  });

  it("merges identical hits (same query, same answer) into one, counting the sessions", () => {
    for (const n of [1, 2, 3]) add(`same${n}`, "Count the vowels in banana", { finalAnswer: " 3 " });
    add("other", "Count the vowels in banana", { finalAnswer: "4" });
    const hits = scoped.searchMemory("count the vowels in banana");
    expect(hits.map((h) => [h.session_id, h.sessions])).toEqual([
      ["other", 1],
      ["same3", 3],
    ]);
  });
});
