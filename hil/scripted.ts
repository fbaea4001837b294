/**
 * `scripted:<file>`: answers from a YAML file, per question kind in order — a test double that fails loudly
 * when a question comes with no answer left, and can report the answers nobody asked for.
 *
 *   tool_failure: [{choice: give_result, value: 31}, retry, {choice: edit_code, code: "return 1"}, abort]
 *   clarification: ["metric units", {choice: no_answer}, {choice: defer}]
 *   approval: [allow_once, deny]
 *   elicitation: [{action: accept, content: {name: Ada}}, decline]
 *   interrupt: [continue, {choice: defer}, abort]
 *   in_doubt: [repeat, {choice: give_result, value: {ok: true}}, skip, fail_step]
 *
 * Any entry may carry `expect: <text>`: the question's one-line text must contain it (HIL_SCRIPT_MISMATCH).
 * Stops (`abort`, `fail`, `defer`) may stand for any kind but elicitation.
 *
 * `ui:<file>` is the same file, written by `pda ui` with the one answer a person gave in the page; a question
 * the resumed session meets after it pauses the session again (defer; an elicitation is cancelled), so the
 * page can ask it, where a scripted file would fail.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { ConfigError, systemClock, type Clock } from "../core/index.js";
import { parseConfigText } from "../config/index.js";
import type { AskOptions, HumanChannel } from "./human-channel.js";
import { HumanCancelled, ScriptError } from "./errors.js";
import { elicitationContentSchema, schemaDefaults } from "./elicitation.js";
import {
  ApprovalChoice,
  ElicitValue,
  StopOutcome,
  checkAnswer,
  questionText,
  type AnswerOf,
  type Question,
  type QuestionKind,
} from "./questions.js";

const expect = { expect: z.string().optional() };
const stopEntry = z.strictObject({ choice: StopOutcome, reason: z.string().optional(), ...expect });

/** A bare string names the choice (`retry`, `deny`, `decline`); clarification strings are answer text. */
const asChoice = (key: "choice" | "action") => (v: unknown) => (typeof v === "string" ? { [key]: v } : v);

const ToolFailureEntry = z.preprocess(
  asChoice("choice"),
  z.discriminatedUnion("choice", [
    z.strictObject({ choice: z.enum(["retry", "skip"]), ...expect }),
    z.strictObject({ choice: z.literal("edit_code"), code: z.string().min(1), ...expect }),
    z.strictObject({
      choice: z.literal("give_result"),
      value: z.unknown().refine((v) => v !== undefined, "give_result needs a value"),
      ...expect,
    }),
    stopEntry,
  ]),
);

const ClarificationEntry = z.preprocess(
  (v) => (typeof v === "string" ? { choice: "answer", text: v } : v === null ? { choice: "no_answer" } : v),
  z.discriminatedUnion("choice", [
    z.strictObject({ choice: z.literal("answer"), text: z.string().min(1), ...expect }),
    z.strictObject({ choice: z.literal("no_answer"), ...expect }),
    stopEntry,
  ]),
);

const ApprovalEntry = z.preprocess(
  asChoice("choice"),
  z.discriminatedUnion("choice", [z.strictObject({ choice: ApprovalChoice, ...expect }), stopEntry]),
);

const InterruptEntry = z.preprocess(
  asChoice("choice"),
  z.discriminatedUnion("choice", [z.strictObject({ choice: z.literal("continue"), ...expect }), stopEntry]),
);

const InDoubtEntry = z.preprocess(
  asChoice("choice"),
  z.discriminatedUnion("choice", [
    z.strictObject({ choice: z.enum(["repeat", "skip", "fail_step"]), ...expect }),
    z.strictObject({
      choice: z.literal("give_result"),
      value: z.unknown().refine((v) => v !== undefined, "give_result needs a value"),
      ...expect,
    }),
    stopEntry,
  ]),
);

const ElicitationEntry = z.preprocess(
  asChoice("action"),
  z.discriminatedUnion("action", [
    z.strictObject({ action: z.literal("accept"), content: z.record(z.string(), ElicitValue), ...expect }),
    z.strictObject({ action: z.enum(["decline", "cancel"]), ...expect }),
  ]),
);

/** The scripted answers file. */
export const ScriptFile = z.preprocess(
  (v) => v ?? {},
  z.strictObject({
    tool_failure: z.array(ToolFailureEntry).optional(),
    clarification: z.array(ClarificationEntry).optional(),
    approval: z.array(ApprovalEntry).optional(),
    elicitation: z.array(ElicitationEntry).optional(),
    interrupt: z.array(InterruptEntry).optional(),
    in_doubt: z.array(InDoubtEntry).optional(),
  }),
);
export type ScriptFile = z.infer<typeof ScriptFile>;

type Entry = { expect?: string } & Record<string, unknown>;

/** An answer left in the script when the run ended. */
export interface UnconsumedAnswer {
  kind: QuestionKind;
  /** Its position in that kind's list, 0-based. */
  index: number;
  entry: unknown;
}

export class ScriptedChannel implements HumanChannel {
  /** "scripted", or "ui" for the answers a person gave in `pda ui` (written to a file the resume reads). */
  readonly name: "scripted" | "ui";
  private readonly lists: Record<QuestionKind, Entry[]>;
  private readonly used: Record<QuestionKind, number> = {
    tool_failure: 0,
    clarification: 0,
    approval: 0,
    elicitation: 0,
    interrupt: 0,
    in_doubt: 0,
  };
  /** Named in errors so a failing test points at its script. */
  private readonly source: string;
  private readonly clock: Clock;

  /** `script` in its parsed form (entries as objects); the YAML shorthands are for files (fromFile). */
  constructor(script: ScriptFile, opts?: { source?: string; clock?: Clock; answeredBy?: "scripted" | "ui" }) {
    const s = ScriptFile.parse(script);
    this.name = opts?.answeredBy ?? "scripted";
    this.lists = {
      tool_failure: (s.tool_failure ?? []) as Entry[],
      clarification: (s.clarification ?? []) as Entry[],
      approval: (s.approval ?? []) as Entry[],
      elicitation: (s.elicitation ?? []) as Entry[],
      interrupt: (s.interrupt ?? []) as Entry[],
      in_doubt: (s.in_doubt ?? []) as Entry[],
    };
    this.source = opts?.source ?? "scripted answers";
    this.clock = opts?.clock ?? systemClock;
  }

  /** Load a YAML (or JSON) file; a missing or malformed file is a ConfigError naming file:line and field. */
  static fromFile(file: string, opts?: { clock?: Clock; answeredBy?: "scripted" | "ui" }): ScriptedChannel {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (e) {
      throw new ConfigError(`--hil scripted:${file}: cannot read the file (${(e as Error).message})`, {
        cause: e,
      });
    }
    return new ScriptedChannel(parseConfigText(file, text, ScriptFile), { source: file, ...opts });
  }

  async ask<Q extends Question>(q: Q, opts?: AskOptions): Promise<AnswerOf<Q["kind"]>> {
    if (opts?.signal?.aborted) throw new HumanCancelled("aborted", q);
    const list = this.lists[q.kind];
    const index = this.used[q.kind];
    const where = `${this.source}: ${q.kind}[${index}]`;
    const entry = list[index];
    if (!entry && this.name === "ui") {
      // The page answered the question the session waited on; one it meets next waits for the page in turn.
      const by = { answered_by: this.name, at: this.clock.iso(), note: "asked again in pda ui" };
      return checkAnswer(
        q,
        q.kind === "elicitation"
          ? { kind: "elicitation", action: "cancel", ...by }
          : {
              kind: "stop",
              question_kind: q.kind,
              outcome: "defer",
              reason: "waits for an answer in pda ui",
              ...by,
            },
      );
    }
    if (!entry) {
      throw new ScriptError(
        "HIL_SCRIPT_EXHAUSTED",
        `${this.source}: no scripted ${q.kind} answer left (${list.length} given) for: ${questionText(q)}`,
        q,
      );
    }
    this.used[q.kind] = index + 1;
    if (entry.expect !== undefined && !questionText(q).includes(entry.expect)) {
      throw new ScriptError(
        "HIL_SCRIPT_MISMATCH",
        `${where} expects a question containing "${entry.expect}", got: ${questionText(q)}`,
        q,
      );
    }
    const { expect: _expect, ...fields } = entry;
    const by = { answered_by: this.name, at: this.clock.iso() };
    if (q.kind !== "elicitation" && StopOutcome.safeParse(fields.choice).success) {
      const reason = (fields.reason as string | undefined) ?? `scripted ${fields.choice}`;
      return checkAnswer(q, { kind: "stop", question_kind: q.kind, outcome: fields.choice, reason, ...by });
    }
    if (q.kind === "elicitation" && fields.action === "accept") {
      // As a form does: the schema's defaults fill what the answer leaves out.
      const content = { ...schemaDefaults(q.requestedSchema), ...(fields.content as object | undefined) };
      const r = elicitationContentSchema(q.requestedSchema).safeParse(content);
      if (!r.success) {
        const issue = r.error.issues[0]!;
        const msg = `${where}: content does not fit the requested schema: ${issue.path.join(".") || "(content)"}: ${issue.message}`;
        throw new ScriptError("HIL_SCRIPT_INVALID", msg, q);
      }
      return checkAnswer(q, { kind: "elicitation", action: "accept", content: r.data, ...by });
    }
    return checkAnswer(q, { kind: q.kind, ...fields, ...by });
  }

  /** The answers no question consumed, in file order per kind. */
  unconsumed(): UnconsumedAnswer[] {
    return (Object.keys(this.lists) as QuestionKind[]).flatMap((kind) =>
      this.lists[kind]
        .slice(this.used[kind])
        .map((entry, i) => ({ kind, index: this.used[kind] + i, entry })),
    );
  }

  /** Throw HIL_SCRIPT_UNCONSUMED when answers are left: a test whose script was not played out is wrong. */
  assertConsumed(): void {
    const left = this.unconsumed();
    if (left.length > 0) {
      const list = left.map((u) => `${u.kind}[${u.index}]`).join(", ");
      throw new ScriptError(
        "HIL_SCRIPT_UNCONSUMED",
        `${this.source}: ${left.length} scripted answer(s) never asked for: ${list}`,
      );
    }
  }
}
