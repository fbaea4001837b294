/** Typed errors of the human channel. Bad specs and scripts are ConfigErrors (exit 2) from core. */
import { PdaError } from "../core/index.js";
import type { Question } from "./questions.js";

/**
 * The person did not answer: Ctrl-C at the prompt (`interrupt`) or the caller's AbortSignal (`aborted`).
 * The question is attached so the caller can pause the session (status awaiting_human) and ask it again
 * on resume. Code HIL_CANCELLED, exit 130 like a shell's Ctrl-C.
 */
export class HumanCancelled extends PdaError<"HIL_CANCELLED"> {
  readonly reason: "interrupt" | "aborted";
  readonly question: Question;
  constructor(reason: "interrupt" | "aborted", question: Question, options?: { cause?: unknown }) {
    const what = reason === "interrupt" ? "interrupted (Ctrl-C)" : "cancelled by the caller";
    super("HIL_CANCELLED", `the ${question.kind} question was ${what}`, {
      cause: options?.cause,
      exitCode: 130,
    });
    this.reason = reason;
    this.question = question;
  }
}

/**
 * A scripted channel could not answer: HIL_SCRIPT_EXHAUSTED (no answer left for that kind),
 * HIL_SCRIPT_MISMATCH (the entry's `expect` text is not in the question), HIL_SCRIPT_INVALID (the entry does
 * not fit the question, e.g. elicitation content against its schema), HIL_SCRIPT_UNCONSUMED (answers left). A test double failing loudly.
 */
export type ScriptErrorCode =
  "HIL_SCRIPT_EXHAUSTED" | "HIL_SCRIPT_MISMATCH" | "HIL_SCRIPT_INVALID" | "HIL_SCRIPT_UNCONSUMED";

export class ScriptError extends PdaError<ScriptErrorCode> {
  readonly question?: Question;
  constructor(code: ScriptErrorCode, message: string, question?: Question) {
    super(code, message);
    this.question = question;
  }
}

export function isHumanCancelled(e: unknown): e is HumanCancelled {
  return e instanceof HumanCancelled;
}
