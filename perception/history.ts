/**
 * Bounded context: what the decision and perception prompts see of past steps. The last few steps are shown
 * in full (each field truncated), older ones as one line each, and beyond a limit the oldest collapse into one
 * counting line — so the history's size has a fixed upper bound however long the session runs.
 */
import { clip, oneLine, type Step } from "../core/index.js";
import { toPromptText, truncateForPrompt } from "../heuristics/index.js";

export interface BoundHistoryOptions {
  /** Steps shown in full, from the end (default 3). */
  keepLast?: number;
  /** Cap on a shown result, error, conclusion, question or human answer (default 600). */
  maxCharsPerResult?: number;
  /** Cap on a shown step's code (default 1500). */
  maxCharsPerCode?: number;
  /** Older steps summarised one line each, the most recent ones (default 10); earlier ones are only counted. */
  maxSummaryLines?: number;
  /** Cap on a summary line, a step heading or an assessment (default 200). */
  maxCharsPerLine?: number;
}

/** A step as the prompt shows it: JSON-friendly, every field already truncated. */
export interface StepView {
  index: number;
  description: string;
  type: Step["type"];
  status: Step["status"];
  attempts: number;
  code?: string;
  result?: string;
  error?: string;
  conclusion?: string;
  question?: string;
  human_input?: string;
  /** Perception's verdict on the step's result. */
  assessment?: string;
}

export interface BoundedHistory {
  /** The last steps in full (truncated fields), oldest first. */
  recent: StepView[];
  /** One line per older step, oldest first, after a counting line when steps were omitted. */
  summary: string[];
  /** Steps that appear only in the counting line. */
  omitted: number;
  /** summary and recent rendered as prompt text. */
  text: string;
  /** The upper bound on text.length for these options, whatever the number of steps. */
  maxChars: number;
}

const DEFAULTS = {
  keepLast: 3,
  maxCharsPerResult: 600,
  maxCharsPerCode: 1500,
  maxSummaryLines: 10,
  maxCharsPerLine: 200,
} as const;

/** Room a step block may take beyond its fields' own caps (labels, newlines). */
const BLOCK_OVERHEAD = 96;

function resolve(options: BoundHistoryOptions): Required<BoundHistoryOptions> {
  return { ...DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) };
}

/** The largest text boundHistory can return for these options. */
export function historyBound(options: BoundHistoryOptions = {}): number {
  const o = resolve(options);
  const stepCap = stepBlockCap(o);
  return (o.maxSummaryLines + 1) * (o.maxCharsPerLine + 1) + o.keepLast * (stepCap + 2);
}

function stepBlockCap(o: Required<BoundHistoryOptions>): number {
  return 2 * o.maxCharsPerLine + o.maxCharsPerCode + 5 * o.maxCharsPerResult + BLOCK_OVERHEAD;
}

/** What a step produced, as text: its value, or why it failed. */
function outcomeOf(step: Step): { result?: string; error?: string } {
  const exec = step.execution_result;
  const error = step.error ?? (exec && !exec.ok ? exec.error : undefined);
  const out: { result?: string; error?: string } = {};
  if (error) out.error = `${error.code}: ${error.message}`;
  if (exec?.ok && exec.value !== undefined) out.result = toPromptText(exec.value);
  return out;
}

function viewOf(step: Step, o: Required<BoundHistoryOptions>): StepView {
  const cut = (v: string | undefined, max: number) =>
    v === undefined ? undefined : truncateForPrompt(v, max);
  const { result, error } = outcomeOf(step);
  const view: StepView = {
    index: step.index,
    description: truncateForPrompt(oneLine(step.description), o.maxCharsPerLine),
    type: step.type,
    status: step.status,
    attempts: step.attempts,
  };
  const fields: Record<string, string | undefined> = {
    code: cut(step.code, o.maxCharsPerCode),
    result: cut(result, o.maxCharsPerResult),
    error: cut(error, o.maxCharsPerResult),
    conclusion: cut(step.conclusion, o.maxCharsPerResult),
    question: cut(step.question, o.maxCharsPerResult),
    human_input: cut(step.human_input, o.maxCharsPerResult),
    assessment: step.perception
      ? truncateForPrompt(
          oneLine(
            `${step.perception.local_goal_achieved ? "done" : "not done"}: ${step.perception.local_reasoning}`,
          ),
          o.maxCharsPerLine,
        )
      : undefined,
  };
  for (const [k, v] of Object.entries(fields)) {
    if (v !== undefined) (view as unknown as Record<string, string>)[k] = v;
  }
  return view;
}

function renderView(v: StepView): string {
  const lines = [
    `Step ${v.index} (${v.type}, ${v.status}, ${v.attempts} attempt${v.attempts === 1 ? "" : "s"}): ${v.description}`,
  ];
  if (v.code !== undefined) lines.push(`code:\n${v.code}`);
  for (const key of ["result", "error", "conclusion", "question", "human_input", "assessment"] as const) {
    const value = v[key];
    if (value !== undefined) lines.push(`${key}: ${value}`);
  }
  return lines.join("\n");
}

function summaryLine(step: Step, o: Required<BoundHistoryOptions>): string {
  const { result, error } = outcomeOf(step);
  const outcome = error ?? result ?? step.conclusion ?? step.question;
  const head = `#${step.index} [${step.status}] `;
  if (outcome === undefined) return clip(head + oneLine(step.description), o.maxCharsPerLine);
  // The outcome is the useful part: the description gets at most a third of the line.
  const description = clip(oneLine(step.description), Math.floor(o.maxCharsPerLine / 3));
  const arrow = error ? " → error " : " → ";
  return clip(head + description + arrow + oneLine(outcome), o.maxCharsPerLine);
}

function countLine(steps: readonly Step[], o: Required<BoundHistoryOptions>): string {
  const byStatus = new Map<string, number>();
  for (const s of steps) byStatus.set(s.status, (byStatus.get(s.status) ?? 0) + 1);
  const counts = [...byStatus].map(([status, n]) => `${n} ${status}`).join(", ");
  const first = steps[0]?.index ?? 0;
  const last = steps[steps.length - 1]?.index ?? 0;
  return clip(
    `#${first}–#${last}: ${steps.length} earlier step${steps.length === 1 ? "" : "s"} (${counts}), not shown`,
    o.maxCharsPerLine,
  );
}

/** The steps of a session as bounded prompt context (see BoundHistoryOptions for the caps). */
export function boundHistory(steps: readonly Step[], options: BoundHistoryOptions = {}): BoundedHistory {
  const o = resolve(options);
  const keep = Math.max(0, o.keepLast);
  const older = steps.slice(0, Math.max(0, steps.length - keep));
  const recentSteps = steps.slice(older.length);
  const lined = older.slice(Math.max(0, older.length - o.maxSummaryLines));
  const counted = older.slice(0, older.length - lined.length);

  const summary = [
    ...(counted.length ? [countLine(counted, o)] : []),
    ...lined.map((s) => summaryLine(s, o)),
  ];
  const recent = recentSteps.map((s) => viewOf(s, o));
  const cap = stepBlockCap(o);
  const blocks = recent.map((v) => truncateForPrompt(renderView(v), cap));
  const text = [summary.join("\n"), blocks.join("\n\n")].filter(Boolean).join("\n\n");
  return { recent, summary, omitted: counted.length, text, maxChars: historyBound(o) };
}
