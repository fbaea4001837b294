/**
 * Memory as the prompts see it: past sessions like this one (solutions, and warnings about what failed)
 * and the most and least reliable tools. Both perception and decision receive it on every call.
 */
import type { MemoryHit, SessionStore, ToolStat } from "../../memory/index.js";
import { clip } from "../../core/index.js";
import type { MemoryService } from "./deps.js";

export function renderHits(hits: MemoryHit[]): string {
  if (hits.length === 0) return "";
  const lines = hits.map((h) => {
    const times = h.sessions > 1 ? ` (${h.sessions} sessions)` : "";
    return h.kind === "solution"
      ? `- solved before${times}: "${clip(h.original_query, 200)}" → ${clip(h.final_answer ?? h.solution_summary ?? "", 300)}`
      : `- warning${times}: "${clip(h.original_query, 200)}" was ${clip(h.reason ?? "", 300)}`;
  });
  return `Past sessions like this one (memory; use them as hints, verify with tools):\n${lines.join("\n")}\n`;
}

function statLine(t: ToolStat): string {
  const kinds = Object.entries(t.error_kinds)
    .map(([k, n]) => `${k}×${n}`)
    .join(", ");
  return `${t.server}.${t.tool} ${(t.success_rate * 100).toFixed(0)}% of ${t.calls} calls, p50 ${Math.round(t.p50_ms)} ms${kinds ? ` (${kinds})` : ""}`;
}

export function renderReliability(most: ToolStat[], least: ToolStat[]): string {
  if (most.length === 0 && least.length === 0) return "";
  const parts = ["\nTool reliability from past sessions:"];
  if (most.length) parts.push(`- most reliable: ${most.map(statLine).join("; ")}`);
  const weak = least.filter((t) => t.success_rate < 1);
  if (weak.length) parts.push(`- least reliable: ${weak.map(statLine).join("; ")}`);
  return parts.join("\n");
}

/** Which past sessions a memory may show. */
export interface MemoryScope {
  /**
   * ISO time: only sessions created before it (a batch run's start). Tool statistics are not scoped: they
   * say how tools behave, not what a query's answer was.
   */
  before?: string;
}

/** No memory at all: nothing recalled, no tool statistics, `memory.search` finds nothing. */
export const NO_MEMORY: MemoryService = {
  recall: () => "",
  toolStats: () => "",
  toolStatRows: () => [],
  search: () => [],
  withHits: () => NO_MEMORY,
};

export function storeMemory(store: SessionStore, hits: number, scope: MemoryScope = {}): MemoryService {
  const { before } = scope;
  return {
    recall: (query) => (hits > 0 ? renderHits(store.searchMemory(query, { limit: hits, before })) : ""),
    toolStats: () => {
      const r = store.mostAndLeastReliable(3, { minCalls: 3 });
      return renderReliability(r.most, r.least);
    },
    toolStatRows: () => store.toolStats(),
    search: (text, limit) => store.searchMemory(text, { limit, before }),
    withHits: (n) => storeMemory(store, n, scope),
  };
}
