/** Tool statistics from the tool_calls log: success rate, latency percentiles and error kinds per tool. */
import type Database from "better-sqlite3";
import { ToolStatsOptions, type Reliability, type ToolStat } from "./schemas.js";
import { stmt } from "./sql.js";

const WINDOW_DAYS = 30;

// Nearest-rank percentiles: the value at rank ceil(p·n) of the sorted latencies, ceil written as
// integer arithmetic so it does not depend on SQLite's optional math functions.
const STATS_SQL = `
-- Replayed calls never reached a server and calls still in flight have no outcome: neither is a call's record.
WITH calls AS (SELECT * FROM tool_calls WHERE started_at >= ? AND state IN ('done', 'in_doubt')),
per_tool AS (
  SELECT server, tool, count(*) AS calls, sum(ok) AS ok, max(started_at) AS last_called_at
  FROM calls GROUP BY server, tool
),
ranked AS (
  SELECT server, tool, latency_ms,
         row_number() OVER (PARTITION BY server, tool ORDER BY latency_ms) AS rn,
         count(*) OVER (PARTITION BY server, tool) AS n
  FROM calls
)
SELECT p.server, p.tool, p.calls, p.ok, p.last_called_at,
       (SELECT latency_ms FROM ranked r WHERE r.server = p.server AND r.tool = p.tool AND r.rn = (r.n * 50 + 99) / 100) AS p50,
       (SELECT latency_ms FROM ranked r WHERE r.server = p.server AND r.tool = p.tool AND r.rn = (r.n * 95 + 99) / 100) AS p95
FROM per_tool p ORDER BY p.calls DESC, p.server, p.tool LIMIT ?`;

const ERRORS_SQL = `
SELECT server, tool, coalesce(error_kind, 'unknown') AS kind, count(*) AS n
FROM tool_calls WHERE started_at >= ? AND ok = 0 AND state IN ('done', 'in_doubt') GROUP BY server, tool, kind ORDER BY n DESC, kind`;

export function toolStats(db: Database.Database, options: ToolStatsOptions = {}): ToolStat[] {
  const opts = ToolStatsOptions.parse(options);
  const since = opts.since ?? "";
  const errors = new Map<string, Record<string, number>>();
  for (const e of stmt<{ server: string; tool: string; kind: string; n: number }>(db, ERRORS_SQL).all(
    since,
  )) {
    const key = `${e.server}\u0000${e.tool}`;
    errors.set(key, { ...errors.get(key), [e.kind]: e.n });
  }
  type Row = {
    server: string;
    tool: string;
    calls: number;
    ok: number;
    last_called_at: string;
    p50: number;
    p95: number;
  };
  return stmt<Row>(db, STATS_SQL)
    .all(since, opts.limit)
    .map((r) => ({
      server: r.server,
      tool: r.tool,
      calls: r.calls,
      ok: r.ok,
      failures: r.calls - r.ok,
      success_rate: r.calls ? r.ok / r.calls : 0,
      p50_ms: r.p50,
      p95_ms: r.p95,
      error_kinds: errors.get(`${r.server}\u0000${r.tool}`) ?? {},
      last_called_at: r.last_called_at,
    }));
}

/**
 * The n most and n least reliable tools over a window (default: the last 30 days), for the decision prompt.
 * Least reliable: tools that failed at least once, lowest success rate first. Most reliable: the others,
 * highest success rate, then most used, then fastest. Tools with fewer than minCalls calls are left out.
 */
export function mostAndLeastReliable(
  db: Database.Database,
  n: number,
  options: { since?: string; minCalls?: number; nowMs?: number } = {},
): Reliability {
  const since =
    options.since ?? new Date((options.nowMs ?? Date.now()) - WINDOW_DAYS * 86_400_000).toISOString();
  const minCalls = options.minCalls ?? 3;
  const stats = toolStats(db, { since, limit: 10_000 }).filter((s) => s.calls >= minCalls);
  const least = stats
    .filter((s) => s.failures > 0)
    .sort((a, b) => a.success_rate - b.success_rate || b.calls - a.calls)
    .slice(0, n);
  const most = stats
    .filter((s) => !least.includes(s))
    .sort((a, b) => b.success_rate - a.success_rate || b.calls - a.calls || a.p50_ms - b.p50_ms)
    .slice(0, n);
  return { most, least };
}

/** Two lines for a prompt, e.g. "Most reliable tools: math.add (40/40 ok, p50 3 ms)". */
export function describeReliability(r: Reliability): string {
  const fmt = (s: ToolStat) => {
    const errs = Object.entries(s.error_kinds)
      .map(([k, v]) => `${k}×${v}`)
      .join(", ");
    return `${s.server}.${s.tool} (${s.ok}/${s.calls} ok, p50 ${Math.round(s.p50_ms)} ms${errs ? `; ${errs}` : ""})`;
  };
  return [
    `Most reliable tools: ${r.most.length ? r.most.map(fmt).join("; ") : "none yet"}`,
    `Least reliable tools: ${r.least.length ? r.least.map(fmt).join("; ") : "none"}`,
  ].join("\n");
}
