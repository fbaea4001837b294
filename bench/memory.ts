/**
 * Memory search at scale: p50/p99 of SessionStore.searchMemory over 10k and 100k synthetic sessions, next to
 * the original system's approach measured in the same run (read every session's JSON, fuzzy-match its query
 * with a normalised Levenshtein ratio). Also the recorder's cost per write. Prints JSON.
 *
 *   node dist/bench/memory.js [--sizes 10000,100000] [--queries 200] [--baseline-queries 5]
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { distance } from "fastest-levenshtein";
import { percentile, type AgentSession } from "../core/index.js";
import { SessionStore } from "../memory/index.js";
import { simulateSession } from "../memory/tests/simulate.js";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "10000,100000" },
    queries: { type: "string", default: "200" },
    "baseline-queries": { type: "string", default: "5" },
  },
});
const SIZES = values.sizes.split(",").map(Number);
const QUERIES = Number(values.queries);
const BASELINE_QUERIES = Number(values["baseline-queries"]);

// ---- a deterministic synthetic corpus with a long-tailed vocabulary ----

function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = rng(42);
const int = (n: number) => Math.floor(rand() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
/** Zipf-like pick: low indices much more often, so a few words are common and most are rare. */
const zipf = <T>(xs: readonly T[]): T => xs[Math.floor(xs.length * rand() ** 3)]!;

const SYL = [
  "ka",
  "lo",
  "mi",
  "ra",
  "te",
  "no",
  "su",
  "vi",
  "de",
  "ba",
  "zo",
  "re",
  "pa",
  "li",
  "gu",
  "an",
  "or",
  "el",
];
const word = () => Array.from({ length: 2 + int(3) }, () => pick(SYL)).join("");
const TOPICS = Array.from({ length: 6000 }, word);
const PLACES = Array.from({ length: 1500 }, () => word().replace(/^./, (c) => c.toUpperCase()));
const COLORS = ["red", "blue", "green", "yellow", "black", "white", "orange", "purple"];
const SHAPES = ["cube", "sphere", "cylinder", "block", "ring", "cone"];
const DOCS = ["report", "contract", "manual", "invoice", "paper", "memo", "thesis", "policy"];
const METRICS = ["weather forecast", "air quality", "population", "exchange rate", "traffic", "train times"];
const CUR = ["dollars", "euros", "yen", "pounds", "francs", "rupees", "pesos"];

const TEMPLATES: (() => string)[] = [
  () => `What is ${int(100)} + ${int(100)} - ${int(10)} * ${int(10)}`,
  () => `Compute the factorial of ${int(20)} and add ${int(100)}`,
  () => `Sum the ASCII values of the characters in ${zipf(PLACES).toUpperCase()}`,
  () => `What is the ${int(50)}th Fibonacci number times ${int(9)}`,
  () => `Summarize the ${zipf(TOPICS)} ${pick(DOCS)} in ${zipf(TOPICS)}.pdf`,
  () => `What does the ${pick(DOCS)} say about ${zipf(TOPICS)} and ${zipf(TOPICS)}`,
  () => `Fetch the ${pick(METRICS)} for ${zipf(PLACES)}`,
  () => `Search the web for ${zipf(TOPICS)} news in ${zipf(PLACES)}`,
  () => `Move the ${pick(COLORS)} ${pick(SHAPES)} onto the ${pick(COLORS)} plate`,
  () => `Stack the ${pick(COLORS)} ${pick(SHAPES)} on the ${pick(COLORS)} ${pick(SHAPES)}`,
  () => `Convert ${int(1000)} ${pick(CUR)} to ${pick(CUR)}`,
  () => `Explain how ${zipf(TOPICS)} relates to ${zipf(TOPICS)} in ${zipf(PLACES)}`,
];

function hexId(i: number): string {
  const h = (n: number) =>
    Math.floor(rand() * 16 ** n)
      .toString(16)
      .padStart(n, "0");
  return `${h(8)}-${h(4)}-4${h(3)}-8${h(3)}-${i.toString(16).padStart(12, "0")}`;
}

interface Synthetic {
  id: string;
  query: string;
  status: "succeeded" | "failed" | "budget_exhausted";
  createdAt: string;
  json: string;
}

function synthetic(i: number, now: number): Synthetic {
  const query = pick(TEMPLATES)();
  const r = rand();
  const status = r < 0.8 ? "succeeded" : r < 0.95 ? "failed" : "budget_exhausted";
  const createdAt = new Date(now - int(365 * 86_400_000)).toISOString();
  const answer = status === "succeeded" ? `The answer is ${int(10_000)}` : null;
  const session: AgentSession = {
    $schemaVersion: 1,
    session_id: hexId(i),
    original_query: query,
    created_at: createdAt,
    snapshots: [
      {
        index: 0,
        snapshot_type: "user_query",
        snapshot: {
          entities: query.split(" ").slice(-3),
          result_requirement: `An answer to: ${query}`,
          original_goal_achieved: false,
          reasoning: "Needs tools.",
          local_goal_achieved: false,
          local_reasoning: "Nothing done yet.",
          last_tooluse_summary: "none",
          solution_summary: "not ready yet",
          confidence: 0.3,
        },
        created_at: createdAt,
      },
    ],
    plan_versions: [
      {
        version: 1,
        plan_text: ["Step 0: use a tool", "Step 1: conclude"],
        steps: [0],
        reason: "initial",
        triggered_by: "snapshot:0",
        created_at: createdAt,
      },
    ],
    steps: [
      {
        index: 0,
        description: "use a tool",
        type: "CODE",
        code: "return await add(1, 2)",
        status: status === "succeeded" ? "completed" : "failed",
        attempts: 1,
        plan_version: 1,
      },
    ],
    state: {
      original_goal_achieved: status === "succeeded",
      final_answer: answer,
      confidence: 0.8,
      solution_summary: answer ?? "not ready yet",
      human_inputs: [],
    },
    usage: {
      llm_calls: 3,
      input_tokens: 900,
      output_tokens: 200,
      tokens: 1100,
      tool_calls: 1,
      ms: 2100,
      cost_usd: 0,
    },
    status,
    ...(status === "succeeded"
      ? {}
      : { status_reason: status === "failed" ? "the tool server timed out" : "max steps reached" }),
  };
  return { id: session.session_id, query, status, createdAt, json: JSON.stringify(session) };
}

/** Sessions inserted as rows in one transaction (the FTS triggers index them as they go). */
function fill(store: SessionStore, from: number, to: number, now: number, keep: Synthetic[]): void {
  const insert = store.db.prepare(`
    INSERT INTO sessions (id, original_query, status, status_reason, final_answer, solution_summary,
      result_requirement, confidence, original_goal_achieved, created_at, updated_at, finished_at, session_json)
    VALUES (?, ?, ?, ?, ?, ?, ?, 0.8, ?, ?, ?, ?, ?)`);
  store.db.transaction(() => {
    for (let i = from; i < to; i++) {
      const s = synthetic(i, now);
      const parsed = JSON.parse(s.json) as AgentSession;
      insert.run(
        s.id,
        s.query,
        s.status,
        parsed.status_reason ?? null,
        parsed.state.final_answer,
        parsed.state.solution_summary,
        `An answer to: ${s.query}`,
        s.status === "succeeded" ? 1 : 0,
        s.createdAt,
        s.createdAt,
        s.createdAt,
        s.json,
      );
      if (i % 97 === 0) keep.push(s);
    }
  })();
}

/** A past query asked again in other words: one number changed, one word left out. */
function variant(query: string): string {
  const words = query.split(" ");
  const numbers = words.flatMap((w, i) => (/^\d+$/.test(w) ? [i] : []));
  if (numbers.length) words[pick(numbers)] = String(int(100));
  if (words.length > 5) words.splice(1 + int(words.length - 2), 1);
  return words.join(" ");
}

// ---- the two searches ----

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(percentile(s, p / 100) * 1000) / 1000;
}

/** Wall time, and CPU time of this process (what the search itself costs, without waiting for a core). */
function time<T>(fn: () => T): { ms: number; cpuMs: number; value: T } {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = fn();
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { ms, cpuMs: (c.user + c.system) / 1000, value };
}

function percentiles(xs: number[]) {
  return { p50_ms: pct(xs, 50), p99_ms: pct(xs, 99), max_ms: pct(xs, 100) };
}

/**
 * The original system: every session's JSON read and parsed, its query fuzzy-matched to the new one.
 * Returns the best-matching sessions' queries.
 */
function naiveSearch(store: SessionStore, text: string, limit = 5, threshold = 0.5): string[] {
  const q = text.toLowerCase();
  const scored: { id: string; score: number }[] = [];
  for (const json of store.db
    .prepare("SELECT session_json FROM sessions")
    .pluck()
    .iterate() as Iterable<string>) {
    const s = JSON.parse(json) as AgentSession;
    const other = s.original_query.toLowerCase();
    const score = 1 - distance(q, other) / Math.max(q.length, other.length, 1);
    if (score >= threshold) scored.push({ id: s.original_query, score });
  }
  return scored
    .sort((a, b) => b.score - a.score)
    .slice(0, limit)
    .map((s) => s.id);
}

function recorderCost(dir: string): { writes: number; mean_us_per_write: number } {
  const store = SessionStore.open(join(dir, "recorder.db"));
  let writes = 0;
  const counting = new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== "function") return v;
      return (...args: unknown[]) => {
        writes++;
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const t = time(() => {
    for (let i = 0; i < 100; i++)
      simulateSession(counting, { id: `r${i}`, query: `bench session ${i}`, steps: 5 });
  });
  store.close();
  return { writes, mean_us_per_write: Math.round((t.ms * 1000) / writes) };
}

// ---- run ----
// "found": a reworded past question brought back that question (the session itself, or one that asked
// exactly the same) among the top 5.

const dir = mkdtempSync(join(tmpdir(), "pda-bench-memory-"));
try {
  const now = Date.parse("2025-06-01T00:00:00Z");
  const store = SessionStore.open(join(dir, "bench.db"), {
    clock: { now: () => now, iso: () => new Date(now).toISOString(), sleep: async () => {} },
  });
  const kept: Synthetic[] = [];
  const results = [];
  let filled = 0;
  for (const size of SIZES) {
    const build = time(() => fill(store, filled, size, now, kept));
    filled = size;
    store.db.pragma("wal_checkpoint(TRUNCATE)");
    store.db.pragma("optimize");

    // Half the queries re-ask a past session's question in other words, half are new questions.
    const asked = Array.from({ length: QUERIES }, (_, i) => {
      if (i % 2 === 0) {
        const source = pick(kept);
        return { text: variant(source.query), source: source.query as string | null };
      }
      return { text: pick(TEMPLATES)(), source: null };
    });
    for (const q of asked.slice(0, 20)) store.searchMemory(q.text); // warm-up
    const fts = asked.map((q) => {
      const t = time(() => store.searchMemory(q.text, { limit: 5 }));
      const found = q.source !== null && t.value.some((h) => h.original_query === q.source);
      return { ms: t.ms, cpuMs: t.cpuMs, hits: t.value.length, found };
    });
    const baselineAsked = asked.slice(0, BASELINE_QUERIES);
    const base = baselineAsked.map((q) => {
      const t = time(() => naiveSearch(store, q.text));
      return { ms: t.ms, found: q.source !== null && t.value.includes(q.source) };
    });
    const ftsWall = percentiles(fts.map((f) => f.ms));
    const baseWall = percentiles(base.map((b) => b.ms));
    results.push({
      sessions: size,
      build_s: Math.round(build.ms / 100) / 10,
      db_mb: Math.round(statSync(join(dir, "bench.db")).size / 1e5) / 10,
      memory_search: {
        queries: fts.length,
        ...ftsWall,
        cpu: percentiles(fts.map((f) => f.cpuMs)),
        queries_with_hits: fts.filter((f) => f.hits > 0).length,
        reworded_found_in_top5: `${fts.filter((f) => f.found).length}/${asked.filter((q) => q.source).length}`,
      },
      naive_scan_fuzzy_baseline: {
        queries: base.length,
        ...baseWall,
        reworded_found_in_top5: `${base.filter((b) => b.found).length}/${baselineAsked.filter((q) => q.source).length}`,
      },
      speedup_p50: Math.round(baseWall.p50_ms / ftsWall.p50_ms),
    });
  }
  store.close();
  const largest = results[results.length - 1]!;
  process.stdout.write(
    `${JSON.stringify(
      {
        bench: "memory",
        node: process.version,
        cpus: cpus().length,
        load_average_1m: Math.round(loadavg()[0]! * 10) / 10,
        sizes: results,
        recorder: recorderCost(dir),
        target: {
          p99_ms: 10,
          at_sessions: largest.sessions,
          met_wall: largest.memory_search.p99_ms <= 10,
          met_cpu: largest.memory_search.cpu.p99_ms <= 10,
        },
      },
      null,
      2,
    )}\n`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
