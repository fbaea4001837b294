/**
 * Tool selection: which tools the decision gets to see. Relevance is bm25 (minisearch) over each tool's name,
 * description and parameter names, for the query and the current step; reliability is the tool's success
 * rate from the hub's statistics, pulled toward a prior so a tool with few calls is neither trusted nor
 * punished on little evidence. The score is their product.
 */
import MiniSearch from "minisearch";
import type { ToolInfo } from "../core/index.js";

/** How a tool has fared, from memory's tool statistics. */
export interface ToolStat {
  calls: number;
  ok: number;
}

export interface RankOptions {
  query: string;
  /** The current step's description (or plan line); searched together with the query. */
  step?: string;
  /**
   * How tools have fared: memory's toolStats() rows ({server, tool, calls, ok, ...}) as they are, or a map keyed
   * by qualified name ("server.tool"; a plain name is accepted for a unique tool).
   */
  stats?:
    | ReadonlyArray<ToolStat & { server: string; tool: string }>
    | ReadonlyMap<string, ToolStat>
    | Readonly<Record<string, ToolStat>>;
  topK: number;
  /** Tools the plan already uses (plain or qualified names): always selected, whatever their rank. */
  alwaysInclude?: readonly string[];
  /** Beta prior on the success rate: its mean and its weight in pseudo-calls. Default {mean: 0.9, weight: 4}. */
  prior?: { mean: number; weight: number };
}

export interface ToolScore {
  qualified: string;
  /** Raw bm25 score (0 when no query term matched). */
  bm25: number;
  /** bm25 divided by the best bm25 of this query, 0..1. */
  relevance: number;
  /** Query terms (after expansion) that matched this tool. */
  matched: string[];
  /** Posterior mean success rate, 0..1. */
  reliability: number;
  calls: number;
  ok: number;
  /** relevance × reliability; ties (e.g. no match at all) go to the more reliable tool. */
  score: number;
  /** 1-based position in the ranking. */
  rank: number;
  /** Why it is in the selection, or null when it is not. */
  selected: "top_k" | "plan" | null;
  /** One line for debugging: how the score was made. */
  explain: string;
}

export interface RankResult {
  /** The selection in rank order: the top K plus any tool the plan uses. */
  tools: ToolInfo[];
  /** Every tool, best first. */
  scores: ToolScore[];
  /** alwaysInclude names that match no tool. */
  unknown: string[];
}

const STOP_WORDS = new Set(
  (
    "a an and are as at be by can could do does for from get give how i in into is it its me my of on or " +
    "please show tell that the their then there these this to use using was what when where which who why " +
    "will with would you your"
  ).split(" "),
);

/**
 * Words people use for what tools are named after. Generic intents only: the expansion adds the tool-ish
 * word beside the user's word, it never replaces it.
 */
const SYNONYMS: Readonly<Record<string, string>> = {
  times: "multiply",
  multiplied: "multiply",
  product: "multiply",
  multiplication: "multiply",
  plus: "add sum",
  sum: "add",
  total: "add sum",
  addition: "add",
  minus: "subtract",
  difference: "subtract",
  subtraction: "subtract",
  divided: "divide",
  quotient: "divide",
  division: "divide",
  squared: "power",
  cubed: "power",
  exponent: "power",
  sqrt: "root",
  url: "fetch web",
  website: "fetch web url",
  webpage: "fetch web url page",
  download: "fetch",
  folder: "directory list",
  directory: "list",
  contents: "read",
  open: "read",
  lookup: "search",
  find: "search",
};

const OPERATORS: ReadonlyArray<[RegExp, string]> = [
  [/\d\s*(?:\*|×|x)\s*\d/i, "multiply"],
  [/\d\s*\+\s*\d/, "add"],
  [/\d\s*[-−]\s*\d/, "subtract"],
  [/\d\s*(?:\/|÷)\s*\d/, "divide"],
  [/\d\s*(?:\^|\*\*)\s*\d/, "power"],
  [/\bhttps?:\/\/|\bwww\./i, "fetch url web"],
];

/** Lower-case, drop stop words, strip common English endings so "multiplies" meets "multiply". */
function processTerm(term: string): string | null {
  const t = term.toLowerCase();
  if (STOP_WORDS.has(t)) return null;
  if (t.length > 4 && t.endsWith("ies")) return t.slice(0, -3) + "y";
  if (t.length > 5 && t.endsWith("ing")) return t.slice(0, -3);
  if (t.length > 4 && /(?:ss|x|ch|sh)es$/.test(t)) return t.slice(0, -2);
  if (t.length > 4 && t.endsWith("ed") && !t.endsWith("eed")) return t.slice(0, -2);
  if (t.length > 3 && t.endsWith("s") && !t.endsWith("ss")) return t.slice(0, -1);
  return t;
}

/** "fetch_url_as_markdown" and "getWeatherNow" become words. */
function splitName(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_\-./]+/g, " ")
    .trim();
}

/** The query plus the tool-ish words its operators and synonyms imply. */
export function expandQuery(text: string): string {
  const extra: string[] = [];
  for (const [re, words] of OPERATORS) if (re.test(text)) extra.push(words);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    const syn = SYNONYMS[word];
    if (syn) extra.push(syn);
  }
  return extra.length ? `${text} ${extra.join(" ")}` : text;
}

function reliabilityOf(stat: ToolStat | undefined, prior: { mean: number; weight: number }): number {
  const calls = Math.max(0, stat?.calls ?? 0);
  const ok = Math.min(calls, Math.max(0, stat?.ok ?? 0));
  return (ok + prior.mean * prior.weight) / (calls + prior.weight);
}

export interface ToolRanker {
  rank(options: RankOptions): RankResult;
}

/** Builds the search index once for a tool list; rank() may then be called for every step. */
export function createToolRanker(tools: readonly ToolInfo[]): ToolRanker {
  const index = new MiniSearch<{
    id: string;
    name: string;
    description: string;
    params: string;
    server: string;
  }>({
    fields: ["name", "description", "params", "server"],
    processTerm,
  });
  index.addAll(
    tools.map((t) => ({
      id: t.qualified,
      name: `${t.name} ${splitName(t.name)}`,
      description: t.description,
      params: Object.keys((t.inputSchema.properties as Record<string, unknown> | undefined) ?? {})
        .map(splitName)
        .join(" "),
      server: splitName(t.server),
    })),
  );

  return {
    rank(options: RankOptions): RankResult {
      const prior = options.prior ?? { mean: 0.9, weight: 4 };
      const text = expandQuery([options.query, options.step ?? ""].join(" ").trim());
      const hits = new Map(
        index
          .search(text, {
            boost: { name: 3, description: 1, params: 1, server: 0.5 },
            prefix: (term) => term.length >= 4,
            fuzzy: (term) => (term.length >= 5 ? 0.2 : false),
            combineWith: "OR",
          })
          .map((r) => [r.id as string, r]),
      );
      const best = Math.max(0, ...[...hits.values()].map((r) => r.score));
      const stats = options.stats;
      const byName: ReadonlyMap<string, ToolStat> | Readonly<Record<string, ToolStat>> | undefined =
        Array.isArray(stats)
          ? new Map(stats.map((r) => [`${r.server}.${r.tool}`, r]))
          : (stats as ReadonlyMap<string, ToolStat> | Readonly<Record<string, ToolStat>> | undefined);
      const statOf = (t: ToolInfo): ToolStat | undefined => {
        if (!byName) return undefined;
        const get = (k: string) =>
          byName instanceof Map ? byName.get(k) : (byName as Readonly<Record<string, ToolStat>>)[k];
        return get(t.qualified) ?? (t.unique ? get(t.name) : undefined);
      };

      const scored = tools.map((tool, order) => {
        const hit = hits.get(tool.qualified);
        const stat = statOf(tool);
        const bm25 = hit?.score ?? 0;
        const relevance = best > 0 ? bm25 / best : 0;
        const reliability = reliabilityOf(stat, prior);
        return {
          tool,
          order,
          qualified: tool.qualified,
          bm25,
          relevance,
          matched: hit ? [...new Set(hit.queryTerms)] : [],
          reliability,
          calls: stat?.calls ?? 0,
          ok: stat?.ok ?? 0,
          score: relevance * reliability,
        };
      });
      scored.sort((a, b) => b.score - a.score || b.reliability - a.reliability || a.order - b.order);

      const always = new Set<string>();
      const unknown: string[] = [];
      for (const name of options.alwaysInclude ?? []) {
        const found = tools.filter((t) => t.qualified === name || t.name === name);
        if (found.length === 0) unknown.push(name);
        found.forEach((t) => always.add(t.qualified));
      }

      const topK = Math.max(0, options.topK);
      const scores: ToolScore[] = scored.map((s, i) => {
        const selected = i < topK ? "top_k" : always.has(s.qualified) ? "plan" : null;
        return {
          qualified: s.qualified,
          bm25: s.bm25,
          relevance: s.relevance,
          matched: s.matched,
          reliability: s.reliability,
          calls: s.calls,
          ok: s.ok,
          score: s.score,
          rank: i + 1,
          selected,
          // Made when read (debugging, `pda tools --rank`): the loop ranks every tool at every decision.
          get explain() {
            return (
              `${s.qualified}: score ${s.score.toFixed(3)} = relevance ${s.relevance.toFixed(2)} ` +
              `(bm25 ${s.bm25.toFixed(2)}${s.matched.length ? `, matched ${s.matched.join(" ")}` : ", no match"}) × ` +
              `reliability ${s.reliability.toFixed(2)} (${s.ok}/${s.calls} ok, prior ${prior.mean}×${prior.weight})` +
              (selected === "plan" ? "; kept because the plan uses it" : "")
            );
          },
        };
      });
      const selectedTools = scored.filter((_, i) => scores[i]?.selected).map((s) => s.tool);
      return { tools: selectedTools, scores, unknown };
    },
  };
}

const rankers = new WeakMap<readonly ToolInfo[], ToolRanker>();

/**
 * The ranker of a tool list, built once per list array: sessions over the same hub list share it. The hub
 * replaces its list array when its tools change, never edits it in place, so a changed list gets a new ranker.
 */
export function toolRankerFor(tools: readonly ToolInfo[]): ToolRanker {
  let ranker = rankers.get(tools);
  if (!ranker) rankers.set(tools, (ranker = createToolRanker(tools)));
  return ranker;
}

/** Ranks tools for one query; see createToolRanker to reuse the index across steps. */
export function rankTools(tools: readonly ToolInfo[], options: RankOptions): RankResult {
  return createToolRanker(tools).rank(options);
}
