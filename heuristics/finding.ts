/**
 * A Finding is what every guard returns: one observation about a query, a piece of code or a result, typed by
 * rule and severity. Guards never throw on bad input and never rewrite silently: whatever they changed or
 * refused is a Finding the loop shows to perception or the decision.
 */
import { z } from "zod";
import type { StepError } from "../core/index.js";

/** info: worth telling the model; warn: likely a problem; block: do not proceed (stop, or fail the step). */
export const Severity = z.enum(["info", "warn", "block"]);
export type Severity = z.infer<typeof Severity>;

export const FindingRule = z.enum([
  // query guards
  "query.empty",
  "query.url_syntax",
  "query.url_no_protocol",
  "query.file_missing",
  "query.overlong",
  "query.long_sentence",
  "query.repetitive",
  "query.blocklist",
  // code guards
  "code.parse_error",
  "code.unknown_tool",
  "code.ambiguous_tool",
  "code.tool_args",
  "code.undefined_name",
  "code.forbidden",
  "code.no_return",
  // result guards
  "result.empty",
  "result.error_text",
  "result.traceback",
  "result.error_field",
  "result.not_a_number",
  "result.unexpected_type",
]);
export type FindingRule = z.infer<typeof FindingRule>;

/** Character offsets into the checked text, end exclusive. */
export const Span = z.object({ start: z.number().int().min(0), end: z.number().int().min(0) });
export type Span = z.infer<typeof Span>;

export const Finding = z.object({
  rule: FindingRule,
  severity: Severity,
  /** Written for the model: says what is wrong and what to do instead. */
  message: z.string(),
  span: Span.optional(),
  /** 1-based line and column (code guards). */
  line: z.number().int().min(1).optional(),
  column: z.number().int().min(1).optional(),
  /** Replacements worth trying: nearest tool names, the https:// form of a URL, ... */
  suggestions: z.array(z.string()).optional(),
});
export type Finding = z.infer<typeof Finding>;

export function isBlocking(findings: readonly Finding[]): boolean {
  return findings.some((f) => f.severity === "block");
}

/** One line per finding (messages already name any suggestion), blocking ones first, for a prompt or a terminal. */
export function formatFindings(findings: readonly Finding[]): string {
  const order: Record<Severity, number> = { block: 0, warn: 1, info: 2 };
  return [...findings]
    .sort((a, b) => order[a.severity] - order[b.severity])
    .map((f) => {
      const at =
        f.line !== undefined ? ` at line ${f.line}${f.column !== undefined ? `:${f.column}` : ""}` : "";
      return `[${f.severity}] ${f.rule}${at}: ${f.message}`;
    })
    .join("\n");
}

/**
 * The StepError a failed guard puts on a step: code GUARD_<RULE> of the first blocking finding, its line and
 * column, and every blocking finding in the message so the model can fix them all in one attempt.
 */
export function findingsToStepError(findings: readonly Finding[]): StepError | undefined {
  const blocking = findings.filter((f) => f.severity === "block");
  const first = blocking[0];
  if (!first) return undefined;
  const error: StepError = {
    code: `GUARD_${first.rule.replace(".", "_").toUpperCase()}`,
    message: formatFindings(blocking),
  };
  if (first.line !== undefined) error.line = first.line;
  if (first.column !== undefined) error.column = first.column;
  return error;
}
