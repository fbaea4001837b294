/**
 * Memory search: which past sessions are like this query.
 *
 * Relevance is BM25 with presence in place of term frequency (k1 = 0), normalised to 0..1: the share of the
 * query's content words a session contains, each word weighted by its idf from the FTS5 index's own document
 * counts (numbers count half: they are instance details, not the task). Being absolute, one threshold means
 * the same in a small memory and a large one. FTS5's bm25() is not used to order: it computes idf by reading
 * every posting list of every query phrase, tens of milliseconds at 100k sessions.
 *
 * Finding candidates costs the same at any size: the weights give the minimal groups of words a session must
 * contain to reach the threshold, and FTS5 answers, as a boolean query that stops early, with the newest
 * sessions containing a whole group (and the newest containing every word). Those are scored exactly; ties
 * go to the newer. Words are tokenised and stemmed by SQLite itself (temp FTS5 tables with the index's
 * tokenizer), so the weights line up with what the index holds.
 */
import type Database from "better-sqlite3";
import { FAILED_STATUSES, SearchOptions, type MemoryHit } from "./schemas.js";
import { stmt } from "./sql.js";

/** Must match the tokenizer of sessions_fts (migration 2). */
const TOKENIZE = "porter unicode61 remove_diacritics 2";
const MAX_QUERY_WORDS = 16;
/** Newest sessions fetched per candidate query (those with every word; those reaching the threshold). */
const PER_TIER = 40;
/** Beyond this many minimal word groups the query falls back to one OR of the words that can matter. */
const MAX_GROUPS = 64;
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

/** Contentless temp FTS5 tables: cheap to fill and to empty ('delete-all'), never written to the file. */
function ensureTempTables(db: Database.Database): void {
  if (withTempTables.has(db)) return;
  db.exec(
    `CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_terms USING fts5(t, content='', tokenize='${TOKENIZE}');
     CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_terms_v USING fts5vocab(temp, memory_terms, 'instance');`,
  );
  withTempTables.add(db);
}

function fillTemp(db: Database.Database, texts: string[]): void {
  stmt(db, "INSERT INTO temp.memory_terms(memory_terms) VALUES ('delete-all')").run();
  const insert = stmt(db, "INSERT INTO temp.memory_terms(rowid, t) VALUES (?, ?)");
  texts.forEach((t, i) => insert.run(i + 1, t));
}

interface QueryTerm {
  term: string;
  /** A surface word that produces the term, for MATCH expressions (FTS5 stems it the same way). */
  word: string;
  df: number;
  weight: number;
}

function queryTerms(db: Database.Database, words: string[], n: number): QueryTerm[] {
  fillTemp(db, words);
  const dfOf = stmt<{ doc: number }>(db, "SELECT doc FROM sessions_fts_vocab WHERE term = ?");
  const byTerm = new Map<string, QueryTerm>();
  for (const r of stmt<{ term: string; doc: number }>(
    db,
    "SELECT term, doc FROM temp.memory_terms_v",
  ).all()) {
    if (byTerm.has(r.term)) continue;
    const df = dfOf.get(r.term)?.doc ?? 0;
    // An unseen word weighs like the rarest seen one rather than infinitely more: one typo must not sink
    // every hit.
    const d = Math.max(df, 1);
    const idf = Math.log(1 + (n - d + 0.5) / (d + 0.5));
    const weight = /^\p{N}+$/u.test(r.term) ? idf / 2 : idf;
    byTerm.set(r.term, { term: r.term, word: words[r.doc - 1]!, df, weight: Math.max(weight, 0.01) });
  }
  return [...byTerm.values()];
}

/**
 * An FTS5 query matching exactly the sessions whose words weigh at least `need`: an OR of the minimal groups
 * of terms reaching it (heaviest first; a group stops growing once it reaches `need`). With too many groups,
 * an OR of the words a reaching session cannot lack all of — a superset, filtered afterwards.
 */
function reachingQuery(terms: QueryTerm[], need: number): string | null {
  const sorted = [...terms].sort((a, b) => b.weight - a.weight);
  const suffix = sorted.map((_, i) => sorted.slice(i).reduce((sum, t) => sum + t.weight, 0));
  const groups: QueryTerm[][] = [];
  const walk = (i: number, group: QueryTerm[], sum: number): boolean => {
    if (sum >= need) return groups.push([...group]) <= MAX_GROUPS;
    if (i >= sorted.length || sum + suffix[i]! < need) return true;
    group.push(sorted[i]!);
    const more = walk(i + 1, group, sum + sorted[i]!.weight);
    group.pop();
    return more && walk(i + 1, group, sum);
  };
  const quote = (t: QueryTerm) => `"${t.word}"`;
  if (walk(0, [], 0)) {
    return groups.length ? groups.map((g) => `(${g.map(quote).join(" AND ")})`).join(" OR ") : null;
  }
  let rest = suffix[0]!;
  const any: QueryTerm[] = [];
  for (const t of sorted) {
    if (rest < need) break;
    any.push(t);
    rest -= t.weight;
  }
  return any.map(quote).join(" OR ");
}

/** For each text (by position), which of the terms it contains. */
function termsIn(db: Database.Database, texts: string[], terms: QueryTerm[]): Set<string>[] {
  fillTemp(db, texts);
  const out = texts.map(() => new Set<string>());
  const match = stmt<{ rowid: number }>(db, "SELECT rowid FROM temp.memory_terms WHERE memory_terms MATCH ?");
  for (const t of terms) {
    for (const r of match.all(`"${t.word}"`)) out[r.rowid - 1]!.add(t.term);
  }
  return out;
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

/** Sequence numbers of the newest `n` sessions matching `match` up to `maxSeq`, newest first. */
function newestMatches(db: Database.Database, match: string, n: number, maxSeq: number): number[] {
  return stmt<{ rowid: number }>(
    db,
    "SELECT rowid FROM sessions_fts WHERE sessions_fts MATCH ? AND rowid <= ? ORDER BY rowid DESC LIMIT ?",
  )
    .all(match, maxSeq, n)
    .map((r) => r.rowid);
}

/**
 * Which sessions memory may recall (beside status and time): those that reached a model (one successful
 * call other than a batch judge's; not a replay, whose calls are played back from the log), and none whose
 * answer came from a person unless the person said it may be reused (`pda memory remember`): a person's
 * answer (their secret number, their preference) belongs to the session it was given in. Policy answers are
 * no person's.
 */
const RECALLABLE = `
  EXISTS (SELECT 1 FROM llm_calls l WHERE l.session_id = sessions.id AND l.ok = 1
          AND l.provider <> 'replay' AND l.role <> 'judge')
  AND (remember_human = 1 OR NOT EXISTS (SELECT 1 FROM human_inputs h WHERE h.session_id = sessions.id
          AND h.answered_by NOT LIKE 'policy:%'))`;

const norm = (t: string | null) => (t ?? "").normalize("NFKC").toLowerCase().replace(/\s+/g, " ").trim();

/** Hits that say the same thing (kind, query, answer or reason) as one, counting the sessions; best first. */
function mergeIdentical(hits: MemoryHit[]): MemoryHit[] {
  const byKey = new Map<string, MemoryHit>();
  for (const h of hits) {
    const said = h.kind === "solution" ? (h.final_answer ?? h.solution_summary) : h.reason;
    const key = JSON.stringify([h.kind, norm(h.original_query), norm(said)]);
    const first = byKey.get(key);
    if (first) first.sessions += 1;
    else byKey.set(key, h);
  }
  return [...byKey.values()];
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
    const n = stmt<{ n: number | null }>(db, "SELECT max(seq) AS n FROM sessions").get()!.n ?? 0;
    // Sessions are numbered as they start, so one created before `before` has a seq below the first one
    // created at or after it: FTS5 then skips the later ones instead of filling the candidates with them.
    const maxSeq =
      opts.before === undefined
        ? n
        : (stmt<{ s: number | null }>(db, "SELECT min(seq) AS s FROM sessions WHERE created_at >= ?").get(
            opts.before,
          )!.s ?? n + 1) - 1;
    const terms = queryTerms(db, words, n);
    const total = terms.reduce((sum, t) => sum + t.weight, 0);
    const seen = terms.filter((t) => t.df > 0);
    // A session needs at least one query word, even at threshold 0.
    const need = Math.max(opts.threshold * total, 1e-9);
    if (seen.reduce((sum, t) => sum + t.weight, 0) < need) return [];
    const all = seen.map((t) => `"${t.word}"`).join(" AND ");
    const reaching = reachingQuery(seen, need);
    const seqs = new Set([
      ...newestMatches(db, all, Math.max(PER_TIER, opts.limit), maxSeq),
      ...(reaching === null ? [] : newestMatches(db, reaching, Math.max(PER_TIER, opts.limit * 8), maxSeq)),
    ]);
    const statuses = opts.warnings ? ["succeeded", ...FAILED_STATUSES] : ["succeeded"];
    const bySeq = new Map(
      stmt<CandidateRow>(
        db,
        `SELECT seq, id, status, status_reason, original_query, result_requirement, solution_summary,
                final_answer, created_at
         FROM sessions WHERE seq IN (SELECT value FROM json_each(?))
           AND status IN (${statuses.map(() => "?").join(", ")})
           AND (? IS NULL OR created_at < ?) AND ${RECALLABLE}`,
      )
        .all(JSON.stringify([...seqs]), ...statuses, opts.before ?? null, opts.before ?? null)
        .map((c) => [c.seq, c]),
    );
    const candidates = [...seqs].flatMap((seq) => bySeq.get(seq) ?? []);
    if (candidates.length === 0) return [];

    const contained = termsIn(
      db,
      candidates.map((c) =>
        [c.original_query, c.result_requirement ?? "", c.solution_summary ?? "", c.final_answer ?? ""].join(
          "\n",
        ),
      ),
      seen,
    );
    const hits: MemoryHit[] = [];
    candidates.forEach((c, i) => {
      const matched = seen.filter((t) => contained[i]!.has(t.term));
      const relevance = Math.min(1, matched.reduce((sum, t) => sum + t.weight, 0) / total);
      if (relevance < opts.threshold) return;
      const ageDays = Math.max(0, (nowMs - Date.parse(c.created_at)) / 86_400_000);
      const boost = RECENCY_BOOST * 0.5 ** (ageDays / RECENCY_HALF_LIFE_DAYS);
      const solution = c.status === "succeeded";
      hits.push({
        session_id: c.id,
        kind: solution ? "solution" : "warning",
        status: c.status as MemoryHit["status"],
        relevance,
        score: relevance * (1 + (Number.isFinite(boost) ? boost : 0)),
        original_query: c.original_query,
        result_requirement: c.result_requirement,
        solution_summary: c.solution_summary,
        final_answer: c.final_answer,
        reason: solution ? null : failureReason(db, c),
        matched_terms: matched.map((t) => t.term),
        created_at: c.created_at,
        sessions: 1,
      });
    });
    // Stable sort: equal scores keep newest first.
    return mergeIdentical(hits.sort((a, b) => b.score - a.score)).slice(0, opts.limit);
  })();
}
