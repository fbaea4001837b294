/**
 * Reads for agent teams: the sessions a session's sub-agents ran (linked by parent_session_id), and tool
 * statistics per agent (the sessions' agent column joined to their tool calls).
 */
import type Database from "better-sqlite3";
import { z } from "zod";
import type { SessionListItem } from "./schemas.js";
import { LIST_COLUMNS, listItem, type ListRow } from "./read.js";
import { stmt } from "./sql.js";

/** The sessions whose parent is `parentId`, oldest first. */
export function childSessions(db: Database.Database, parentId: string): SessionListItem[] {
  return db
    .prepare<unknown[], ListRow>(
      `SELECT ${LIST_COLUMNS} FROM sessions s WHERE s.parent_session_id = ? ORDER BY s.created_at, s.seq`,
    )
    .all(parentId)
    .map(listItem);
}

export const AgentToolStat = z.object({
  /** The agent whose session made the calls ("" for sessions run without an agent). */
  agent: z.string(),
  server: z.string(),
  tool: z.string(),
  calls: z.number().int(),
  ok: z.number().int(),
  failures: z.number().int(),
  success_rate: z.number().min(0).max(1),
  mean_ms: z.number(),
  /** Failure counts by error kind (e.g. TOOL_NOT_ALLOWED). */
  error_kinds: z.record(z.string(), z.number().int()),
});
export type AgentToolStat = z.infer<typeof AgentToolStat>;

// Replayed calls never reached a server and calls in flight have no outcome: neither counts (as in stats.ts).
const AGENT_STATS_SQL = `
SELECT coalesce(s.agent, '') AS agent, t.server, t.tool, count(*) AS calls, sum(t.ok) AS ok,
       avg(t.latency_ms) AS mean_ms
FROM tool_calls t JOIN sessions s ON s.id = t.session_id
WHERE t.started_at >= ? AND t.state IN ('done', 'in_doubt')
GROUP BY agent, t.server, t.tool ORDER BY agent, calls DESC, t.server, t.tool`;

const AGENT_ERRORS_SQL = `
SELECT coalesce(s.agent, '') AS agent, t.server, t.tool, coalesce(t.error_kind, 'unknown') AS kind, count(*) AS n
FROM tool_calls t JOIN sessions s ON s.id = t.session_id
WHERE t.started_at >= ? AND t.ok = 0 AND t.state IN ('done', 'in_doubt') GROUP BY agent, t.server, t.tool, kind`;

/** Calls, success rate, mean latency and error kinds per agent and tool, since `since` (ISO; default all). */
export function agentToolStats(db: Database.Database, since = ""): AgentToolStat[] {
  const errors = new Map<string, Record<string, number>>();
  type E = { agent: string; server: string; tool: string; kind: string; n: number };
  for (const e of stmt<E>(db, AGENT_ERRORS_SQL).all(since)) {
    const k = `${e.agent}\u0000${e.server}\u0000${e.tool}`;
    errors.set(k, { ...errors.get(k), [e.kind]: e.n });
  }
  type R = { agent: string; server: string; tool: string; calls: number; ok: number; mean_ms: number };
  return stmt<R>(db, AGENT_STATS_SQL)
    .all(since)
    .map((r) => ({
      ...r,
      failures: r.calls - r.ok,
      success_rate: r.calls ? r.ok / r.calls : 0,
      error_kinds: errors.get(`${r.agent}\u0000${r.server}\u0000${r.tool}`) ?? {},
    }));
}
