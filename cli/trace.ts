/** The live trace of `pda run`: perception → plan vN → step → result, one readable line or block each. */
import chalk from "chalk";
import type { LoopEvent } from "../agent/index.js";
import type { DownServer, ServerLogEntry } from "../core/index.js";
import type { HubEvent } from "../mcp_servers/index.js";

const clip = (text: string, n: number) => (text.length > n ? `${text.slice(0, n)}…` : text);
const json = (v: unknown) => JSON.stringify(v) ?? "undefined";

export function traceLine(e: LoopEvent, verbose = false): string | null {
  switch (e.type) {
    case "session_start":
      return chalk.dim(`session ${e.session_id}`);
    case "perception": {
      const s = e.snapshot;
      const flags = `goal ${s.original_goal_achieved ? chalk.green("✓") : chalk.yellow("…")} step ${s.local_goal_achieved ? chalk.green("✓") : chalk.yellow("…")}`;
      return `${chalk.cyan("perception")} ${chalk.dim(`[${e.mode}]`)} ${flags} ${chalk.dim(clip(s.reasoning, verbose ? 400 : 100))}`;
    }
    case "plan": {
      const lines = e.plan.plan_text.map((l) => `    ${l}`).join("\n");
      return `${chalk.magenta(`plan v${e.plan.version}`)} ${chalk.dim(`(${e.plan.reason})`)}\n${lines}`;
    }
    case "step_start": {
      const st = e.step;
      const head = `${chalk.blue(`step ${st.plan_step ?? st.index}`)} ${chalk.dim(st.type)} ${st.description}${st.attempts > 1 ? chalk.yellow(` (attempt ${st.attempts})`) : ""}`;
      if (st.type === "CODE" && st.code) {
        const code = st.code
          .trimEnd()
          .split("\n")
          .map((l) => chalk.gray(`    │ ${l}`))
          .join("\n");
        return `${head}\n${code}`;
      }
      return head;
    }
    case "tool_call": {
      const r = e.record;
      const status = r.ok ? chalk.green("ok") : chalk.red(r.error_kind ?? "failed");
      return `    ${chalk.dim("→")} ${r.server}.${r.tool} ${status} ${chalk.dim(`${Math.round(r.latency_ms)} ms`)}${r.ok ? "" : chalk.red(` ${clip(r.error_message ?? "", 160)}`)}`;
    }
    case "log":
      return chalk.gray(`    console: ${clip(e.line, 200)}`);
    case "step_end": {
      const st = e.step;
      const r = st.execution_result;
      if (st.type !== "CODE" || !r) return null;
      return r.ok
        ? `    ${chalk.green("result")} ${clip(json(r.value), verbose ? 2000 : 200)}`
        : `    ${chalk.red(`error ${r.error?.code}`)} ${clip(r.error?.message ?? "", verbose ? 2000 : 300)}`;
    }
    case "session_end":
      return null;
    case "agent_start":
      return `    ${chalk.cyan(`⇢ agent ${e.agent}`)} ${chalk.dim(e.session_id.slice(0, 8))} ${clip(e.task, verbose ? 400 : 120)}`;
    case "agent_event": {
      // A sub-agent's own trace, indented under the step that called it.
      if (e.event.type === "session_start" || e.event.type === "session_end") return null;
      const inner = traceLine(e.event, verbose);
      return inner && inner.replace(/^/gm, `    ${chalk.dim(`${e.agent} │`)} `);
    }
    case "agent_end": {
      const r = e.report;
      const code = r.success ? chalk.green(r.error_code) : chalk.red(r.error_code);
      return `    ${chalk.cyan(`⇠ agent ${e.agent}`)} ${code} ${clip(r.reason, verbose ? 400 : 160)} ${chalk.dim(`(${e.tool_calls_used} tool calls)`)}`;
    }
    case "handoff":
      return `${chalk.magenta(`handoff ${e.from} → ${e.to}`)} ${clip(e.reason, 200)}`;
  }
}

/** The logger name of the hub's own notes in server_logs (servers' messages carry theirs). */
export const HUB_LOGGER = "pda.hub";

/** The hub's notes in a session's server log (servers down, retried), for `pda show`. */
export function serverNoteLines(logs: ServerLogEntry[]): string[] {
  const notes = logs.filter((l) => l.logger === HUB_LOGGER);
  if (notes.length === 0) return [];
  return [
    chalk.bold("servers"),
    ...notes.map((n) => {
      const line = `  ${n.at.slice(11, 19)} ${n.server} ${n.message}`;
      return n.level === "error" ? chalk.red(line) : chalk.yellow(line);
    }),
  ];
}

/** A hub event worth a trace line: a server going down, being retried, or back. Null for the rest. */
export function hubEventLine(e: HubEvent): string | null {
  if (e.type !== "server_state") return null;
  if (e.state === "failed" || e.state === "crashed")
    return chalk.red(
      `    ✗ server ${e.server} ${e.state === "failed" ? "failed" : "crashed"}: ${clip(e.error ?? "", 300)}`,
    );
  if (e.state === "connecting" && e.retry) return chalk.yellow(`    ↻ server ${e.server}: retry ${e.retry}`);
  return null;
}

/** The servers already down when a session starts (they failed before anyone listened). */
export function downLines(down: DownServer[]): string[] {
  return down.map((d) => chalk.red(`    ✗ server ${d.server} is down: ${clip(d.reason, 300)}`));
}
