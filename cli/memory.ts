/**
 * The session store at the terminal, shared by `pda sessions`, `show`, `export` and `memory`: the store opened
 * for reading, option checks, and sessions, timelines, memory hits and tool statistics rendered as text.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import chalk from "chalk";
import type { Command } from "commander";
import { clip, ConfigError, defaultDbPath, oneLine } from "../core/index.js";
import {
  DisplayStatus,
  SessionStore,
  type MemoryHit,
  type SessionListItem,
  type Timeline,
  type TimelineEvent,
  type ToolStat,
} from "../memory/index.js";
import { openTelemetry } from "../telemetry/index.js";

interface Globals {
  db?: string;
  verbose?: boolean;
  otel?: boolean;
}

export const globals = (cmd: Command) => cmd.optsWithGlobals() as Globals;
export const dbPathOf = (g: Globals) => resolve(g.db ?? process.env.PDA_DB ?? defaultDbPath());
const when = (iso: string | null) => (iso ? iso.replace("T", " ").slice(0, 19) : "—");
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const usd = (n: number) => `$${n.toFixed(6)}`;
export const out = (text: string): void => {
  process.stdout.write(`${text}\n`);
};
export const printJson = (value: unknown) => out(JSON.stringify(value, null, 2));

/** `pda show … | head` closes the pipe early: stop quietly instead of crashing with EPIPE. */
export function quietOnClosedPipe(): void {
  process.stdout.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code === "EPIPE") process.exit(0);
    throw e;
  });
}

/** Open the store for reading; null when the file does not exist yet (nothing was ever logged). */
export function openExisting(g: Globals): SessionStore | null {
  const path = dbPathOf(g);
  return existsSync(path) ? SessionStore.open(path, { mustExist: true }) : null;
}

export function withStore<T>(g: Globals, body: (store: SessionStore) => T): T {
  const store = SessionStore.open(dbPathOf(g), { mustExist: true });
  try {
    return body(store);
  } finally {
    store.close();
  }
}

// Options are checked inside runCommand so bad values exit 2 with a message, like every usage error.
export function positiveInt(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0)
    throw new ConfigError(`${name} must be a positive integer, got "${value}"`);
  return n;
}

export function fraction(value: string): number {
  const n = Number(value);
  if (!(n >= 0 && n <= 1)) throw new ConfigError(`--threshold must be a number from 0 to 1, got "${value}"`);
  return n;
}

export function statusOption(value: string): DisplayStatus {
  const parsed = DisplayStatus.safeParse(value);
  if (!parsed.success) {
    throw new ConfigError(`--status must be one of ${DisplayStatus.options.join(", ")}; got "${value}"`);
  }
  return parsed.data;
}

const STATUS_COLOR: Record<DisplayStatus, (s: string) => string> = {
  succeeded: chalk.green,
  running: chalk.cyan,
  awaiting_human: chalk.yellow,
  failed: chalk.red,
  aborted: chalk.red,
  budget_exhausted: chalk.yellow,
  interrupted: chalk.magenta,
};
export const status = (s: DisplayStatus, width = 0) => STATUS_COLOR[s](s.padEnd(width));

export function sessionLine(s: SessionListItem): string {
  const answer = s.final_answer ? ` ${chalk.dim("→")} ${clip(oneLine(s.final_answer), 60)}` : "";
  const figures = chalk.dim(`${s.steps} steps · ${s.tokens} tok · ${secs(s.duration_ms)}`);
  return `${chalk.dim(s.session_id.slice(0, 8))}  ${when(s.created_at)}  ${status(s.status, 16)} ${clip(oneLine(s.original_query), 70)}${answer}  ${figures}`;
}

function indent(text: string, prefix: string): string {
  return text
    .trimEnd()
    .split("\n")
    .map((l) => `${prefix}${l}`)
    .join("\n");
}

function eventLines(e: TimelineEvent, verbose: boolean): string[] {
  const max = verbose ? 4000 : 300;
  switch (e.kind) {
    case "snapshot": {
      const { snapshot: s, snapshot_type, index, step_index } = e.snapshot;
      const about = step_index === undefined ? snapshot_type : `${snapshot_type}, step ${step_index}`;
      const goal = s.original_goal_achieved ? chalk.green("goal ✓") : chalk.yellow("goal …");
      const local =
        snapshot_type === "user_query"
          ? ""
          : s.local_goal_achieved
            ? chalk.green(" step ✓")
            : chalk.yellow(" step …");
      return [
        `${chalk.cyan(`perception #${index}`)} ${chalk.dim(`(${about})`)} ${goal}${local} ${chalk.dim(`confidence ${s.confidence.toFixed(2)}`)}`,
        `    ${chalk.dim("requirement")} ${clip(oneLine(s.result_requirement), max)}`,
        `    ${chalk.dim("reasoning")}   ${clip(oneLine(s.reasoning), max)}`,
        ...(s.solution_summary && s.solution_summary !== "not ready yet"
          ? [`    ${chalk.dim("summary")}     ${clip(oneLine(s.solution_summary), max)}`]
          : []),
        ...(s.human_input ? [`    ${chalk.dim("human")}       ${clip(oneLine(s.human_input), max)}`] : []),
      ];
    }
    case "plan":
      return [
        `${chalk.magenta(`plan v${e.plan.version}`)} ${chalk.dim(`(${e.plan.reason}, triggered by ${e.plan.triggered_by})`)}`,
        ...e.plan.plan_text.map((l) => `    ${l}`),
      ];
    case "step": {
      const st = e.step;
      const color =
        st.status === "completed" ? chalk.green : st.status === "failed" ? chalk.red : chalk.yellow;
      const lines = [
        `${chalk.blue(`step ${st.index}`)} ${chalk.dim(st.type)} ${color(st.status)} ${chalk.dim(`attempt ${st.attempts} · plan v${st.plan_version}`)} ${st.description}`,
      ];
      if (st.code) lines.push(chalk.gray(indent(st.code, "    │ ")));
      if (st.conclusion) lines.push(`    ${chalk.green("conclusion")} ${clip(st.conclusion, max)}`);
      if (st.question) lines.push(`    ${chalk.yellow("question")} ${clip(st.question, max)}`);
      for (const c of e.tool_calls) {
        const ok = c.ok ? chalk.green("ok") : chalk.red(c.error_kind ?? "failed");
        const err = c.ok ? "" : chalk.red(` ${clip(oneLine(c.error_message ?? ""), 160)}`);
        lines.push(
          `    ${chalk.dim("→")} ${c.server}.${c.tool} ${ok}${durableMark(c)} ${chalk.dim(`${Math.round(c.latency_ms)} ms · ${c.bytes} B`)}${err}`,
        );
      }
      const r = st.execution_result;
      for (const log of r?.logs ?? []) lines.push(chalk.gray(`    console: ${clip(log, max)}`));
      if (r?.ok) {
        const size = e.result_truncated
          ? chalk.yellow(` (stored truncated; ${e.result_bytes} bytes in full)`)
          : "";
        lines.push(
          `    ${chalk.green("result")} ${clip(JSON.stringify(r.value) ?? "undefined", max)}${size}`,
        );
      }
      const error = st.error ?? r?.error;
      if (error) lines.push(`    ${chalk.red(`error ${error.code}`)} ${clip(oneLine(error.message), max)}`);
      if (st.human_input) lines.push(`    ${chalk.dim("human")} ${clip(oneLine(st.human_input), max)}`);
      return lines;
    }
    case "tool": {
      const c = e.call;
      return [
        `${chalk.dim("tool")} ${c.server}.${c.tool} ${c.ok ? chalk.green("ok") : chalk.red(c.error_kind ?? "failed")} ${chalk.dim(`${Math.round(c.latency_ms)} ms`)}`,
      ];
    }
    case "llm": {
      const c = e.call;
      const fail = c.ok ? "" : chalk.red(` failed: ${clip(oneLine(c.error ?? ""), 160)}`);
      const tries = c.attempts > 1 ? ` · ${c.attempts} attempts` : "";
      const cost = c.cost_usd === undefined ? "" : ` · ${usd(c.cost_usd)}`;
      const finish = c.finish_reason === undefined ? "" : ` · finish ${c.finish_reason}`;
      return [
        chalk.dim(
          `  model ${c.role} ${c.provider}/${c.model} · ${c.input_tokens}→${c.output_tokens} tok${cost} · ${Math.round(c.latency_ms)} ms${tries}${finish}`,
        ) + fail,
      ];
    }
    case "human": {
      const h = e.input;
      return [
        `${chalk.yellow(`human (${h.kind})`)} ${chalk.dim(`answered by ${h.answered_by} at ${when(h.at)}`)}`,
        `    ${chalk.dim("Q")} ${clip(oneLine(h.question), max)}`,
        `    ${chalk.dim("A")} ${clip(oneLine(h.answer), max)}`,
      ];
    }
  }
}

/** `withSubagents`: what the session spent with its sub-agents (agent-tree.ts), shown under its own figures. */
export function renderTimeline(t: Timeline, verbose = false, withSubagents = ""): string {
  const s = t.session;
  const u = t.usage;
  const head = [
    `${chalk.bold(`session ${s.session_id}`)}  ${status(s.status)}${s.agent ? chalk.dim(`  agent ${s.agent}`) : ""}`,
    chalk.dim(
      `started ${when(s.created_at)} · ended ${when(s.finished_at)} · ${secs(u.ms)} · ${u.llm_calls} model calls · ` +
        `${u.tool_calls} tool calls · ${u.tokens} tokens (${u.input_tokens} in, ${u.output_tokens} out)` +
        (u.cost_usd > 0 ? ` · ${usd(u.cost_usd)}` : ""),
    ),
    ...(withSubagents ? [chalk.dim(withSubagents)] : []),
    `${chalk.bold("query")}  ${s.original_query}`,
  ];
  if (s.status_reason) head.push(`${chalk.bold("reason")} ${s.status_reason}`);
  if (s.interrupted_reason && s.status === "interrupted")
    head.push(`${chalk.magenta("interrupted")} ${s.interrupted_reason}`);
  if (s.pending_question) head.push(`${chalk.yellow("waiting on")} ${s.pending_question}`);
  const body = t.events.flatMap((e) => eventLines(e, verbose));
  const answer = s.final_answer ? [`${chalk.green.bold("answer")} ${s.final_answer}`] : [];
  return [...head, "", ...body, "", ...answer].join("\n");
}

/** The session's agent tree (sub-agent sessions and their reports) after its timeline, when it has one. */
export const withTree = (timeline: string, tree: string) => (tree ? `${timeline}\n\n${tree}` : timeline);

export function hitLines(h: MemoryHit): string {
  const kind = h.kind === "solution" ? chalk.green("solution") : chalk.yellow("warning ");
  const figures = chalk.dim(
    `relevance ${h.relevance.toFixed(2)} · ${when(h.created_at)} · ${h.session_id.slice(0, 8)}` +
      (h.sessions > 1 ? ` · ${h.sessions} identical sessions` : ""),
  );
  const detail =
    h.kind === "solution"
      ? `    ${chalk.dim("answer")} ${clip(oneLine(h.final_answer ?? h.solution_summary ?? ""), 200)}`
      : `    ${chalk.dim(clip(oneLine(h.reason ?? ""), 200))}`;
  return `${kind} ${clip(oneLine(h.original_query), 100)}  ${figures}\n${detail}`;
}

export function statLine(s: ToolStat): string {
  const rate = `${(s.success_rate * 100).toFixed(0)}%`;
  const color = s.success_rate >= 0.95 ? chalk.green : s.success_rate >= 0.8 ? chalk.yellow : chalk.red;
  const errs = Object.entries(s.error_kinds)
    .map(([k, n]) => `${k}×${n}`)
    .join(", ");
  return `${`${s.server}.${s.tool}`.padEnd(32)} ${String(s.calls).padStart(6)} calls  ${color(rate.padStart(4))}  p50 ${Math.round(s.p50_ms)} ms  p95 ${Math.round(s.p95_ms)} ms${errs ? chalk.dim(`  ${errs}`) : ""}`;
}

/** `pda export --otel`: a stored session, or a batch run's sessions, sent as traces with their stored times. */
export async function exportOtel(
  g: Globals,
  id: string | undefined,
  batch: string | undefined,
): Promise<void> {
  if (!!id === !!batch) throw new ConfigError("pda export --otel: name either a session id or --batch <run>");
  const store = SessionStore.open(dbPathOf(g), { mustExist: true });
  try {
    const telemetry = await openTelemetry({ flag: true, redact: (t) => store.redact(t) });
    if (!telemetry)
      throw new ConfigError("pda export --otel: OpenTelemetry is disabled (OTEL_SDK_DISABLED=true)");
    try {
      const what = batch
        ? `${telemetry.exportBatch(store, batch)} sessions of batch run ${batch}`
        : `session ${store.resolveId(id!)}`;
      if (!batch) telemetry.exportSession(store, id!);
      process.stderr.write(chalk.dim(`${what} sent over OTLP\n`));
    } finally {
      await telemetry.shutdown();
    }
  } finally {
    store.close();
  }
}

/**
 * How a durable step's call got its outcome, when it was not simply made: replayed, in doubt, sent; for a call
 * that was in doubt, what was decided (made again, its result given, not made) and by whom.
 */
function durableMark(c: { state?: string; decided_by?: string }): string {
  const state =
    c.state === "replayed"
      ? chalk.cyan(" replayed")
      : c.state === "in_doubt"
        ? chalk.magenta(" in doubt")
        : c.state === "sent"
          ? chalk.yellow(" in flight")
          : c.decided_by
            ? chalk.magenta(
                c.decided_by.endsWith("give_result")
                  ? " result given"
                  : /(skip|fail_step|no_human)$/.test(c.decided_by)
                    ? " not made again"
                    : " made again",
              )
            : "";
  return state + (c.decided_by ? chalk.dim(` (decided by ${c.decided_by})`) : "");
}
