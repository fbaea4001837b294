/**
 * The agent tree `pda show` prints under a session's timeline: who held control when (handoffs), and every
 * sub-agent session under it, recursively, with its report. Reads the store only (no agent code loaded).
 */
import chalk from "chalk";
import { clip, oneLine, totalSpend, type AgentCallRecord, type AgentSession } from "../core/index.js";
import type { SessionListItem, SessionStore } from "../memory/index.js";

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export const statusColor = (s: string) =>
  s === "succeeded"
    ? chalk.green(s)
    : s === "running" || s === "awaiting_human"
      ? chalk.yellow(s)
      : chalk.red(s);

/**
 * What a session spent with its sub-agents, under its own figures (`pda run`, `pda show`); "" when it called
 * none. Each session's own figures stay its own; this is the roll-up its budgets count.
 */
export function withSubagentsLine(s: Pick<AgentSession, "usage" | "agent_calls">): string {
  const n = s.agent_calls?.length ?? 0;
  if (!n) return "";
  const t = totalSpend(s);
  const cost = t.cost_usd > 0 ? ` · $${t.cost_usd.toFixed(4)}` : "";
  return `with its ${n} sub-agent call${n === 1 ? "" : "s"}, in all: ${t.llm_calls} model calls · ${t.tokens} tokens${cost}`;
}

/**
 * One sub-agent session as tree lines: agent, status, and what its caller got (the report, or UNKNOWN with
 * the reason when it ended without one), figures, task.
 */
function childLines(store: SessionStore, c: SessionListItem, seen?: AgentCallRecord): string[] {
  const r = store.getSession(c.session_id).report ?? seen;
  const code = r
    ? r.success
      ? chalk.green(r.error_code)
      : chalk.red(r.error_code)
    : chalk.yellow("no report");
  const why = r?.reason ?? c.status_reason ?? "";
  const figures = chalk.dim(
    `${c.tool_calls} tool calls · ${c.llm_calls} model calls · ${secs(c.duration_ms)}`,
  );
  return [
    `${chalk.bold(c.agent ?? "?")} ${chalk.dim(c.session_id.slice(0, 8))} ${statusColor(c.status)} ${code} ${clip(oneLine(why), 120)}  ${figures}`,
    chalk.dim(`task: ${clip(oneLine(c.original_query), 120)}`),
  ];
}

function controlLines(s: AgentSession): string[] {
  return (s.control ?? []).map((c) =>
    c.from
      ? `${chalk.magenta(`handoff ${c.from} → ${c.agent}`)} ${chalk.dim(`from step ${c.since_step}`)} ${clip(c.reason ?? "", 120)}`
      : `${chalk.magenta(c.agent)} ${chalk.dim(`holds control from step ${c.since_step}`)}`,
  );
}

/**
 * The agent tree of a session: who held control when, and every sub-agent session under it (recursively)
 * with its report. "" for a session run without agents.
 */
export function renderAgentTree(store: SessionStore, idOrPrefix: string): string {
  const root = store.getSession(idOrPrefix);
  const lines: string[] = [];
  const walk = (parent: AgentSession, prefix: string, depth: number) => {
    const children = store.childSessions(parent.session_id);
    children.forEach((c, i) => {
      const last = i === children.length - 1;
      const seen = parent.agent_calls?.find((a) => a.session_id === c.session_id);
      const [head, ...rest] = childLines(store, c, seen);
      lines.push(`${prefix}${last ? "└─ " : "├─ "}${head}`);
      const inner = `${prefix}${last ? "   " : "│  "}`;
      for (const r of rest) lines.push(`${inner}${r}`);
      if (depth < 8) walk(store.getSession(c.session_id), inner, depth + 1);
    });
  };
  walk(root, "", 0);
  const control = controlLines(root);
  if (!root.agent && lines.length === 0 && control.length === 0) return "";
  const calls = root.agent_calls?.length ?? 0;
  const head = `${chalk.bold("agents")} ${root.agent ?? "(no agent)"} ${chalk.dim(`· ${calls} sub-agent call${calls === 1 ? "" : "s"}`)}`;
  return [head, ...control, ...lines].join("\n");
}
