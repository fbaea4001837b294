/**
 * The live trace of `pda run`: perception → plan vN → step → result, one readable line or block each, with why
 * anything failed, every question and who answered it, and checks' warnings. Steps are numbered as stored and
 * as `pda show` and the questions number them: the session's step index, from 0.
 */
import chalk from "chalk";
import type { LoopEvent } from "../agent/index.js";
import { clip, type DownServer, type ServerLogEntry } from "../core/index.js";
import type { HubEvent } from "../mcp_servers/index.js";

const json = (v: unknown) => JSON.stringify(v) ?? "undefined";
/** Continuation lines of a multi-line message, indented under the line they belong to. */
const indent = (text: string) => text.replace(/\n/g, "\n      ");

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
      const plan =
        st.plan_step !== undefined && (st.plan_step !== st.index || st.attempts > 1)
          ? chalk.dim(` (plan step ${st.plan_step}${st.attempts > 1 ? `, attempt ${st.attempts}` : ""})`)
          : "";
      const head = `${chalk.blue(`step ${st.index}`)} ${chalk.dim(st.type)} ${st.description}${plan}`;
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
      const how = e.replayed ? `replayed from session ${e.session_id.slice(0, 8)}, ` : "";
      return `    ${chalk.cyan(`⇠ agent ${e.agent}`)} ${code} ${clip(r.reason, verbose ? 400 : 160)} ${chalk.dim(`(${how}${e.tool_calls_used} tool calls)`)}`;
    }
    case "handoff":
      return `${chalk.magenta(`handoff ${e.from} → ${e.to}`)} ${clip(e.reason, 200)}`;
    case "model_start":
    case "human_ask":
      return null;
    case "model_end":
      // A success shows in what follows (the snapshot, the plan); a failure is the cause of what follows.
      return e.ok
        ? null
        : `    ${chalk.red(`${e.role} model call failed`)} ${indent(clip(e.error ?? "", verbose ? 2000 : 400))}`;
    case "human_input": {
      const h = e.input;
      const at = h.step_index !== undefined ? ` at step ${h.step_index}` : "";
      const answer = `    ${chalk.yellow("answer")} ${h.answer} ${chalk.dim(`— by ${h.answered_by}`)}`;
      // A person at the terminal has just read the question; a script or a policy answered one nobody saw.
      if (h.answered_by === "terminal") return answer;
      return `${chalk.yellow("question")} ${chalk.dim(`(${h.kind}${at})`)} ${indent(clip(h.question, verbose ? 2000 : 300))}\n${answer}`;
    }
    case "warning":
      return `${chalk.yellow(`warning`)} ${chalk.dim(`(${e.source})`)} ${e.message.replace(/\n/g, "\n    ")}`;
  }
}

/**
 * What the spinner says after `e`: a label while something slow starts (a model call, a step's code), null when
 * it ends or a question takes the terminal, undefined when `e` changes nothing.
 */
export function activity(e: LoopEvent, who = ""): string | null | undefined {
  switch (e.type) {
    case "model_start":
      return `${who}${e.role} model (${e.provider}:${e.model})`;
    case "step_start":
      return e.step.type === "CODE" ? `${who}step ${e.step.index} running` : undefined;
    case "model_end":
    case "step_end":
    case "human_ask":
    case "session_end":
      return null;
    case "agent_event":
      return activity(e.event, `${e.agent}: `);
    default:
      return undefined;
  }
}

/**
 * A hub event as a trace line: progress, a server that failed or is being restarted, and any event type this
 * trace does not know yet, shown generically; server logs go to the session log, not here.
 */
export function hubLine(e: HubEvent): string | null {
  switch (e.type) {
    case "progress": {
      const of = e.total ? `/${e.total}` : "";
      return chalk.dim(`    … ${e.server}.${e.tool} ${e.progress}${of}${e.message ? ` ${e.message}` : ""}`);
    }
    case "server_state":
      // A server going down, being retried, or back: the rest of its states are routine.
      if (e.state === "failed" || e.state === "crashed")
        return chalk.red(
          `    ✗ server ${e.server} ${e.state === "failed" ? "failed" : "crashed"}: ${clip(e.error ?? "", 300)}`,
        );
      if (e.state === "connecting" && e.retry)
        return chalk.yellow(`    ↻ server ${e.server}: retry ${e.retry}`);
      return null;
    case "log":
    case "garbage":
    case "tools_changed":
    case "elicitation":
      return null;
    default: {
      const { type, server, ...rest } = e as { type: string; server?: string };
      const detail = Object.entries(rest)
        .map(([k, v]) => `${k}=${typeof v === "string" ? clip(v, 200) : json(v)}`)
        .join(" ");
      return chalk.yellow(`    ${server ? `server ${server} ` : ""}${type.replace(/_/g, " ")} ${detail}`);
    }
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

/** The servers already down when a session starts (they failed before anyone listened). */
export function downLines(down: DownServer[]): string[] {
  return down.map((d) => chalk.red(`    ✗ server ${d.server} is down: ${clip(d.reason, 300)}`));
}
