/**
 * Memory search: which past sessions are like this query. FTS5 (bm25) picks and orders candidates; each
 * candidate's relevance is the share of the query's content words it contains, each word weighted by how
 * rare it is across all sessions (idf), numbers counting half (they are instance details, not the task).
 * Relevance is absolute (0..1), so one threshold means the same thing in a small memory and a large one.
 * Words are tokenised and stemmed by SQLite itself (a temp FTS5 table with the index's tokenizer), so the
 * weights line up exactly with what the index stores.
 */
import type Database from "better-sqlite3";
import { FAILED_STATUSES, SearchOptions, type MemoryHit } from "./schemas.js";
import { stmt } from "./sql.js";

/** Must match the tokenizer of sessions_fts (migration 2). */
const TOKENIZE = "porter unicode61 remove_diacritics 2";
const MAX_QUERY_WORDS = 16;
/** Words in more than this share of sessions are too common to pick candidates by (they still weigh in). */
const COMMON_SHARE = 0.2;
const RECENCY_BOOST = 0.1;
const RECENCY_HALF_LIFE_DAYS = 30;

const STOPWORDS = new Set(
  (
    "a an and are as at be been being but by can could did do does doing done for from had has have having he her " +
    "here hers him his how i if in into is it its itself just me my no nor not of off on once only or other our " +
    "out over own please same she should so some such than that the their them then there these they this those " +
    "through to too under until up very was we were what when where which while who whom why will with would you " +
    "your yours tell give find get let lets show calculate compute"
  ).split(" "),
);

/** Lower-cased content words of a text, stopwords dropped, first occurrence order. */
export function contentWords(text: string): string[] {
  const words =
    text
      .normalize("NFKC")
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? [];
  return [...new Set(words.filter((w) => !STOPWORDS.has(w)))].slice(0, MAX_QUERY_WORDS);
}

const withTempTables = new WeakSet<Database.Database>();

function ensureTempTables(db: Database.Database): void {
  if (withTempTables.has(db)) return;
  db.exec(
    `CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_terms USING fts5(t, tokenize='${TOKENIZE}');
     CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_terms_v USING fts5vocab(temp, memory_terms, 'instance');`,
  );
  withTempTables.add(db);
}

/** Tokenise texts with the index's tokenizer: for each text (by position), its set of indexed terms. */
function tokenize(db: Database.Database, texts: string[]): Set<string>[] {
  const insert = stmt(db, "INSERT INTO temp.memory_terms(rowid, t) VALUES (?, ?)");
  texts.forEach((t, i) => insert.run(i + 1, t));
  const out = texts.map(() => new Set<string>());
  for (const r of stmt<{ term: string; doc: number }>(
    db,
    "SELECT term, doc FROM temp.memory_terms_v",
  ).all()) {
    out[r.doc - 1]!.add(r.term);
  }
  stmt(db, "DELETE FROM temp.memory_terms").run();
  return out;
}

interface QueryTerm {
  term: string;
  /** A surface word that produces the term, for the MATCH expression (FTS5 stems it the same way). */
  word: string;
  df: number;
  weight: number;
}

function queryTerms(db: Database.Database, words: string[]): QueryTerm[] {
  const n = stmt<{ n: number | null }>(db, "SELECT max(seq) AS n FROM sessions").get()!.n ?? 0;
  const dfOf = stmt<{ doc: number }>(db, "SELECT doc FROM sessions_fts_vocab WHERE term = ?");
  const byTerm = new Map<string, QueryTerm>();
  tokenize(db, words).forEach((terms, i) => {
    for (const term of terms) {
      if (byTerm.has(term)) continue;
      const df = dfOf.get(term)?.doc ?? 0;
      // An unseen word weighs like the rarest seen one rather than infinitely more: one typo must not
      // sink every hit.
      const d = Math.max(df, 1);
      const idf = Math.log(1 + (n - d + 0.5) / (d + 0.5));
      const weight = /^\p{N}+$/u.test(term) ? idf / 2 : idf;
      byTerm.set(term, { term, word: words[i]!, df, weight: Math.max(weight, 0.01) });
    }
  });
  return [...byTerm.values()];
}

interface CandidateRow {
  seq: number;
  id: string;
  status: string;
  status_reason: string | null;
  original_query: string;
  result_requirement: string | null;
  solution_summary: string | null;
  final_answer: string | null;
  created_at: string;
}

function failureReason(db: Database.Database, row: CandidateRow): string {
  if (row.status_reason) return `tried and failed because ${row.status_reason}`;
  const step = stmt<{ error_message: string | null; description: string }>(
    db,
    "SELECT error_message, description FROM steps WHERE session_id = ? AND status = 'failed' ORDER BY idx DESC LIMIT 1",
  ).get(row.id);
  if (step?.error_message)
    return `tried and failed because step "${step.description}" failed: ${step.error_message}`;
  return `tried and failed because it ended with status ${row.status}`;
}

export function searchMemory(
  db: Database.Database,
  text: string,
  options: SearchOptions = {},
  nowMs: number = Date.now(),
): MemoryHit[] {
  const opts = SearchOptions.parse(options);
  const words = contentWords(text);
  if (words.length === 0) return [];
  ensureTempTables(db);
  // One read transaction: a consistent snapshot, and the temp-table writes batched.
  return db.transaction(() => {
    const terms = queryTerms(db, words);
    const seen = terms.filter((t) => t.df > 0).sort((a, b) => a.df - b.df);
    if (seen.length === 0) return [];
    const n = stmt<{ n: number | null }>(db, "SELECT max(seq) AS n FROM sessions").get()!.n ?? 0;
    let pick = seen.filter((t) => t.df <= Math.max(1, COMMON_SHARE * n));
    if (pick.length === 0) pick = seen.slice(0, 2);
    const match = pick.map((t) => `"${t.word}"`).join(" OR ");
    const statuses = opts.warnings ? ["succeeded", ...FAILED_STATUSES] : ["succeeded"];
    const candidates = stmt<CandidateRow>(
      db,
      `SELECT s.seq, s.id, s.status, s.status_reason, s.original_query, s.result_requirement,
                s.solution_summary, s.final_answer, s.created_at
         FROM (SELECT rowid, rank FROM sessions_fts WHERE sessions_fts MATCH ? ORDER BY rank LIMIT ?) f
         JOIN sessions s ON s.seq = f.rowid
         WHERE s.status IN (${statuses.map(() => "?").join(", ")})
         ORDER BY f.rank`,
    ).all(match, Math.max(40, opts.limit * 8), ...statuses);
    if (candidates.length === 0) return [];

    const total = terms.reduce((sum, t) => sum + t.weight, 0);
    const docTerms = tokenize(
      db,
      candidates.map((c) =>
        [c.original_query, c.result_requirement ?? "", c.solution_summary ?? "", c.final_answer ?? ""].join(
          "\n",
        ),
      ),
    );
    const hits: MemoryHit[] = [];
    candidates.forEach((c, i) => {
      const has = docTerms[i]!;
      const matched = terms.filter((t) => has.has(t.term));
      const relevance = matched.reduce((sum, t) => sum + t.weight, 0) / total;
      if (relevance < opts.threshold) return;
      const ageDays = Math.max(0, (nowMs - Date.parse(c.created_at)) / 86_400_000);
      const boost = RECENCY_BOOST * 0.5 ** (ageDays / RECENCY_HALF_LIFE_DAYS);
      const solution = c.status === "succeeded";
      hits.push({
        session_id: c.id,
        kind: solution ? "solution" : "warning",
        status: c.status as MemoryHit["status"],
        relevance: Math.min(1, relevance),
        score: relevance * (1 + (Number.isFinite(boost) ? boost : 0)),
        original_query: c.original_query,
        result_requirement: c.result_requirement,
        solution_summary: c.solution_summary,
        final_answer: c.final_answer,
        reason: solution ? null : failureReason(db, c),
        matched_terms: matched.map((t) => t.term),
        created_at: c.created_at,
      });
    });
    // Stable sort: equal scores keep bm25 order.
    return hits.sort((a, b) => b.score - a.score).slice(0, opts.limit);
  })();
}
