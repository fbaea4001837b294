/**
 * Benchmark episodes and the per-task success table (like MALMM's Table I). Experts run in-process; other
 * policies (an LLM agent) plug in through `EpisodeRunner` and report the same record.
 */
import { RobotEnv, type EpisodeRecord } from "./env.js";
import { envApi, runExpert, type ExpertKind } from "./expert/index.js";
import { RobotError } from "./errors.js";
import type { RunSettingsInput } from "./schemas.js";
import { TASK_NAMES, getTask } from "./tasks/index.js";

export interface EpisodeResult extends EpisodeRecord {
  policy: string;
  /** Policy steps: the agent loop's steps, or the expert's pick-and-place moves. */
  steps: number;
  llm_calls: number;
  tokens: number;
  duration_ms: number;
  /** Set when the policy crashed before the episode's end. */
  error?: string;
  /** How an agent's session ended when not "succeeded" (budget, gave up). */
  note?: string;
}

export type EpisodeRunner = (task: string, seed: number) => Promise<EpisodeResult>;

export interface TaskRow {
  task: string;
  episodes: number;
  successes: number;
  success_rate: number;
  /** Mean policy steps (agent loop steps, expert moves) per episode. */
  mean_steps: number;
  /** Mean robot actions (motions and gripper commands) per episode. */
  mean_actions: number;
  mean_tool_calls: number;
  mean_tokens: number;
  /** Episodes that claimed success but failed the check. */
  false_claims: number;
  errors: number;
  /** Error codes seen, summed over episodes. */
  codes: Record<string, number>;
}

/** "N" (seeds 0..N-1), "A-B" (inclusive) or "a,b,c". */
export function parseSeeds(text: string): number[] {
  const t = text.trim();
  const bad = () =>
    new RobotError(
      "BAD_ARGUMENT",
      `--seeds must be N, A-B or a,b,c (whole numbers ≥ 0), got ${JSON.stringify(text)}`,
    );
  const whole = (s: string) => {
    if (!/^\d+$/.test(s.trim())) throw bad();
    return Number(s.trim());
  };
  if (/^\d+$/.test(t)) return Array.from({ length: whole(t) }, (_, i) => i);
  const range = /^(\d+)\s*-\s*(\d+)$/.exec(t);
  if (range) {
    const a = whole(range[1]!);
    const b = whole(range[2]!);
    if (b < a) throw bad();
    return Array.from({ length: b - a + 1 }, (_, i) => a + i);
  }
  const list = t.split(",").map(whole);
  if (list.length === 0) throw bad();
  return list;
}

/** Task names from "a,b" (all when empty), each checked. */
export function parseTasks(text: string | undefined): string[] {
  if (!text?.trim()) return [...TASK_NAMES];
  return text.split(",").map((s) => getTask(s.trim()).name);
}

/** An in-process expert policy over one environment. */
export async function expertRunner(
  kind: ExpertKind,
  settings: RunSettingsInput,
): Promise<{ run: EpisodeRunner; close: () => void }> {
  const env = await RobotEnv.create(settings);
  const run: EpisodeRunner = async (task, seed) => {
    const t0 = performance.now();
    const reset = env.reset(task, seed);
    let error: string | undefined;
    let steps = 0;
    try {
      steps = (await runExpert(kind, envApi(env), task, reset.goal)).moves;
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
    }
    return {
      ...env.record(),
      policy: kind,
      steps,
      llm_calls: 0,
      tokens: 0,
      duration_ms: performance.now() - t0,
      ...(error ? { error } : {}),
    };
  };
  return { run, close: () => env.close() };
}

/** Every (task, seed) pair in order, one at a time. */
export async function runEpisodes(
  tasks: string[],
  seeds: number[],
  run: EpisodeRunner,
  onEpisode?: (r: EpisodeResult, done: number, total: number) => void,
): Promise<EpisodeResult[]> {
  const out: EpisodeResult[] = [];
  const total = tasks.length * seeds.length;
  for (const task of tasks) {
    for (const seed of seeds) {
      const r = await run(task, seed);
      out.push(r);
      onEpisode?.(r, out.length, total);
    }
  }
  return out;
}

function row(task: string, rs: EpisodeResult[]): TaskRow {
  const n = rs.length || 1;
  const codes: Record<string, number> = {};
  for (const r of rs) for (const [c, k] of Object.entries(r.codes)) codes[c] = (codes[c] ?? 0) + k;
  const successes = rs.filter((r) => r.success).length;
  return {
    task,
    episodes: rs.length,
    successes,
    success_rate: Math.round((successes / n) * 1000) / 1000,
    mean_steps: Math.round((rs.reduce((s, r) => s + r.steps, 0) / n) * 10) / 10,
    mean_actions: Math.round((rs.reduce((s, r) => s + r.actions, 0) / n) * 10) / 10,
    mean_tool_calls: Math.round((rs.reduce((s, r) => s + r.tool_calls, 0) / n) * 10) / 10,
    mean_tokens: Math.round(rs.reduce((s, r) => s + r.tokens, 0) / n),
    false_claims: rs.filter((r) => r.claimed_success === true && !r.success).length,
    errors: rs.filter((r) => r.error).length,
    codes: Object.fromEntries(Object.entries(codes).sort()),
  };
}

/** One row per task (in first-seen order) and a final "average" row over all episodes. */
export function successTable(results: EpisodeResult[]): TaskRow[] {
  const tasks = [...new Set(results.map((r) => r.task))];
  const rows = tasks.map((t) =>
    row(
      t,
      results.filter((r) => r.task === t),
    ),
  );
  if (tasks.length > 1) rows.push(row("average", results));
  return rows;
}

/** The table as Markdown. */
export function tableMarkdown(rows: TaskRow[], title: string): string {
  const head =
    "| task | success | episodes | steps | actions | tool calls | tokens | false claims | failure codes |";
  const lines = [`### ${title}`, "", head, "|---|---:|---:|---:|---:|---:|---:|---:|---|"];
  for (const r of rows) {
    const codes = Object.entries(r.codes)
      .map(([c, k]) => `${c} ${k}`)
      .join(", ");
    lines.push(
      `| ${r.task} | ${r.success_rate.toFixed(2)} | ${r.episodes} | ${r.mean_steps} | ${r.mean_actions} | ${r.mean_tool_calls} | ${r.mean_tokens} | ${r.false_claims} | ${codes || "—"}${r.errors ? ` (errors ${r.errors})` : ""} |`,
    );
  }
  return lines.join("\n");
}
