/**
 * Policies answer for a person who is not there (batch runs, no TTY, a terminal prompt that timed out).
 * What each policy means for each kind of question is the table below, as data.
 */
import { z } from "zod";
import { systemClock, type Clock } from "../core/index.js";
import type { AskOptions, HumanChannel } from "./human-channel.js";
import { elicitationContentSchema, schemaDefaults } from "./elicitation.js";
import { HumanCancelled } from "./errors.js";
import { checkAnswer, type Answer, type AnswerOf, type Question, type QuestionKind } from "./questions.js";

export const POLICY_NAMES = ["fail", "skip", "abort", "deny", "defer", "defaults"] as const;
export const PolicyName = z.enum(POLICY_NAMES);
export type PolicyName = z.infer<typeof PolicyName>;

type Stop = { stop: "abort" | "fail" | "defer" };
/** `defaults`: accept a form with its schema's defaults when they fill every required field, else decline. */
type Verdict = Stop | { answer: Record<string, unknown> } | { defaults: true };
const stop = (outcome: Stop["stop"]): Stop => ({ stop: outcome });

/**
 * - fail:  nobody can answer, so the session fails (an elicitation is cancelled; the tool then fails and
 *          the tool_failure that follows fails the session).
 * - skip:  carry on without a person: skip the step, no answer, deny the tool, decline the form.
 * - abort: end the session as aborted.
 * - deny:  refuse what needs granting (approvals denied, forms declined); what needs an answer fails.
 * - defer: pause the session as awaiting_human with the question kept for `pda resume`.
 * - defaults: as fail, but a form is accepted with its schema's defaults (declined when a required field
 *          has none): for servers whose forms have safe defaults.
 * A call in doubt (in_doubt) is never made again by a policy: the step fails (skip: the code is told), or
 *          abort / defer stop the session.
 * An elicitation lives inside a running tool call, which cannot outlast the process, so it never pauses or
 * stops the session directly: it is cancelled (or declined) and the loop sees the tool's failure.
 */
export const POLICY_TABLE: Record<PolicyName, Record<QuestionKind, Verdict>> = {
  fail: {
    tool_failure: stop("fail"),
    clarification: stop("fail"),
    approval: stop("fail"),
    elicitation: { answer: { action: "cancel" } },
    // Ctrl-C was pressed, so someone wants the session stopped; only defer pauses and skip goes on.
    interrupt: stop("abort"),
    in_doubt: { answer: { choice: "fail_step" } },
  },
  skip: {
    tool_failure: { answer: { choice: "skip" } },
    clarification: { answer: { choice: "no_answer" } },
    approval: { answer: { choice: "deny" } },
    elicitation: { answer: { action: "decline" } },
    interrupt: { answer: { choice: "continue" } },
    in_doubt: { answer: { choice: "skip" } },
  },
  abort: {
    tool_failure: stop("abort"),
    clarification: stop("abort"),
    approval: stop("abort"),
    elicitation: { answer: { action: "cancel" } },
    interrupt: stop("abort"),
    in_doubt: stop("abort"),
  },
  deny: {
    tool_failure: stop("fail"),
    clarification: stop("fail"),
    approval: { answer: { choice: "deny" } },
    elicitation: { answer: { action: "decline" } },
    interrupt: stop("abort"),
    in_doubt: { answer: { choice: "fail_step" } },
  },
  defer: {
    tool_failure: stop("defer"),
    clarification: stop("defer"),
    approval: stop("defer"),
    elicitation: { answer: { action: "cancel" } },
    interrupt: stop("defer"),
    in_doubt: stop("defer"),
  },
  defaults: {
    tool_failure: stop("fail"),
    clarification: stop("fail"),
    approval: stop("fail"),
    elicitation: { defaults: true },
    interrupt: stop("abort"),
    in_doubt: { answer: { choice: "fail_step" } },
  },
};

const STOP_REASON: Record<Stop["stop"], (policy: string) => string> = {
  fail: (p) => `no person to answer (policy:${p})`,
  abort: (p) => `the session is aborted (policy:${p})`,
  defer: (p) => `paused until a person answers (policy:${p})`,
};

/** The answer policy `name` gives to `q`, attributed to `policy:<name>`. */
export function policyAnswer<Q extends Question>(
  name: PolicyName,
  q: Q,
  opts: { at: string; note?: string },
): AnswerOf<Q["kind"]> {
  const verdict = POLICY_TABLE[name][q.kind];
  const by = { answered_by: `policy:${name}`, at: opts.at, ...(opts.note ? { note: opts.note } : {}) };
  if ("defaults" in verdict) return checkAnswer(q, { kind: q.kind, ...formDefaults(q), ...by });
  const a: Answer | Record<string, unknown> =
    "stop" in verdict
      ? {
          kind: "stop",
          question_kind: q.kind,
          outcome: verdict.stop,
          reason: opts.note ?? STOP_REASON[verdict.stop](name),
          ...by,
        }
      : { kind: q.kind, ...verdict.answer, ...by };
  return checkAnswer(q, a);
}

function formDefaults(q: Question): Record<string, unknown> {
  if (q.kind !== "elicitation") return { action: "decline" };
  const content = schemaDefaults(q.requestedSchema);
  return elicitationContentSchema(q.requestedSchema).safeParse(content).success
    ? { action: "accept", content }
    : { action: "decline", note: "a required field of the form has no default" };
}

/** `policy:<name>`: answers at once, never reads anything. */
export class PolicyChannel implements HumanChannel {
  readonly name: string;
  constructor(
    readonly policy: PolicyName,
    private readonly clock: Clock = systemClock,
  ) {
    this.name = `policy:${policy}`;
  }

  async ask<Q extends Question>(q: Q, opts?: AskOptions): Promise<AnswerOf<Q["kind"]>> {
    if (opts?.signal?.aborted) throw new HumanCancelled("aborted", q);
    return policyAnswer(this.policy, q, { at: this.clock.iso() });
  }
}
