/** How a question looks in a terminal: a titled header, code with line numbers, the error, the arguments. */
import chalk, { type ChalkInstance } from "chalk";
import type { StepError } from "../core/index.js";
import { elicitationFields, fieldHint } from "./elicitation.js";
import type { Question } from "./questions.js";

export interface RenderOptions {
  /** Terminal width in columns (default 80). */
  width?: number;
  /** Lines of code shown before eliding the rest (default 40). */
  maxCodeLines?: number;
  /** A chalk instance (tests pass `new Chalk({ level: 0 })`). */
  chalk?: ChalkInstance;
}

const TITLES = {
  tool_failure: "A step failed",
  clarification: "The agent has a question",
  approval: "Approval needed",
  elicitation: "A tool asks for input",
  interrupt: "Interrupted",
  in_doubt: "Did this call happen?",
} as const;

function header(title: string, width: number, c: ChalkInstance): string {
  const text = `── ${title} `;
  return c.bold.cyan(text + "─".repeat(Math.max(0, Math.min(width, 100) - text.length)));
}

/** Code with a line-number gutter; the error's line (1-based) marked. Long code is cut with a count. */
export function renderCode(
  code: string,
  opts: { errorLine?: number; maxLines?: number; chalk?: ChalkInstance } = {},
): string {
  const c = opts.chalk ?? chalk;
  const lines = code.replace(/\s+$/, "").split("\n");
  const max = opts.maxLines ?? 40;
  const shown = lines.slice(0, max);
  const pad = String(shown.length).length;
  const out = shown.map((line, i) => {
    const n = i + 1;
    const mark = n === opts.errorLine;
    const gutter = `${mark ? ">" : " "} ${String(n).padStart(pad)} │ `;
    return mark ? c.red(gutter) + c.bold(line) : c.dim(gutter) + line;
  });
  if (lines.length > max) out.push(c.dim(`  … ${lines.length - max} more line(s)`));
  return out.join("\n");
}

/** `✖ TOOL_ERROR in add (line 2): message` */
export function renderError(e: StepError, c: ChalkInstance = chalk): string {
  const where = [e.tool ? `in ${c.bold(e.tool)}` : "", e.line !== undefined ? `(line ${e.line})` : ""]
    .filter(Boolean)
    .join(" ");
  return `${c.red("✖")} ${c.red.bold(e.code)}${where ? ` ${where}` : ""}: ${e.message}`;
}

function renderValue(v: unknown): string {
  const s = JSON.stringify(v, null, 2) ?? String(v);
  return s
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");
}

/** The whole question as the person sees it before the prompt. */
export function renderQuestion(q: Question, opts: RenderOptions = {}): string {
  const c = opts.chalk ?? chalk;
  const width = opts.width ?? 80;
  const lines = [header(TITLES[q.kind], width, c)];
  switch (q.kind) {
    case "tool_failure": {
      const attempts = q.attempts !== undefined ? c.dim(` (${q.attempts} attempt(s) made)`) : "";
      lines.push(`${c.bold(`Step ${q.step_index}:`)} ${q.description}${attempts}`, "");
      lines.push(renderCode(q.code, { errorLine: q.error.line, maxLines: opts.maxCodeLines, chalk: c }), "");
      lines.push(renderError(q.error, c));
      break;
    }
    case "clarification":
      if (q.context) lines.push(c.dim(`Task: ${q.context}`));
      lines.push(`${c.yellow("?")} ${q.question}`);
      break;
    case "approval":
      lines.push(`The agent wants to call ${c.bold(q.server ? `${q.server}.${q.tool}` : q.tool)} with:`);
      lines.push(renderValue(q.args));
      break;
    case "elicitation": {
      lines.push(`${c.bold(q.server)} asks: ${q.message} ${c.dim(`(${c.red("*")} required)`)}`);
      for (const f of elicitationFields(q.requestedSchema)) {
        const req = f.required ? c.red("*") : " ";
        const desc = f.description ? ` — ${f.description}` : "";
        lines.push(`  ${req} ${c.bold(f.label)} ${c.dim(`(${fieldHint(f)})`)}${desc}`);
      }
      break;
    }
    case "interrupt":
      lines.push(`Ctrl-C cancelled ${c.bold(q.what)}. Nothing after it has run.`);
      break;
    case "in_doubt":
      lines.push(
        `Before pda stopped, the step ${q.happened ? "made" : "sent"} ${c.bold(q.server ? `${q.server}.${q.tool}` : q.tool)} with:`,
        renderValue(q.args),
        c.dim(
          q.happened
            ? "It happened, but its result was not kept (too large, or a secret the store redacted). Choose."
            : "No answer came back, so it may or may not have happened. Check, then choose.",
        ),
      );
      break;
  }
  return lines.join("\n") + "\n";
}
