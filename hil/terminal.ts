/**
 * `terminal`: asks the person at the keyboard with @inquirer/prompts. A question may time out into a policy
 * answer; Ctrl-C (or the caller's AbortSignal) throws HumanCancelled so the caller can pause the session.
 */
import chalk from "chalk";
import { systemClock, type Clock } from "../core/index.js";
import type { AskOptions, HumanChannel } from "./human-channel.js";
import {
  elicitationContentSchema,
  elicitationFields,
  fieldError,
  fieldHint,
  type ElicitField,
} from "./elicitation.js";
import { HumanCancelled } from "./errors.js";
import { policyAnswer, type PolicyName } from "./policy.js";
import {
  answerText,
  checkAnswer,
  parseGivenValue,
  type AnswerOf,
  type ElicitValue,
  type ElicitationQuestion,
  type Question,
  type QuestionKind,
  type ToolFailureQuestion,
} from "./questions.js";
import { renderQuestion } from "./render.js";
import { openTerminal, type TerminalKind } from "./tty.js";

/** @inquirer/prompts, imported when the first question is asked: most runs ask none. */
let prompts: typeof import("@inquirer/prompts") | undefined;
const ui = () => prompts!;

type PerKind<T> = T | Partial<Record<QuestionKind, T>>;

export interface TerminalOptions {
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream;
  /** Where to ask when input and output are not given (findTerminal()); default stdin and stdout. */
  terminal?: TerminalKind;
  /** How long a question waits for the person (ms) — one value or per kind. None: wait for ever. */
  timeoutMs?: PerKind<number>;
  /** The policy that answers when the time is up — one name or per kind. Default `defer` (pause, lose nothing). */
  onTimeout?: PerKind<PolicyName>;
  clock?: Clock;
}

/** The prompt context inquirer takes: streams and the signal that cancels the prompt. */
interface Ctx {
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream;
  signal: AbortSignal;
  clearPromptOnDone?: boolean;
}

function perKind<T>(v: PerKind<T> | undefined, kind: QuestionKind): T | undefined {
  if (v === undefined || typeof v !== "object" || v === null) return v as T | undefined;
  return (v as Partial<Record<QuestionKind, T>>)[kind];
}

const seconds = (ms: number) => `${Number((ms / 1000).toFixed(1))}s`;

/** Inquirer's errors are matched by name: @inquirer/core is not a direct dependency. */
const errorName = (e: unknown) => (e instanceof Error ? e.name : "");

export class TerminalChannel implements HumanChannel {
  readonly name = "terminal";
  private readonly clock: Clock;

  constructor(private readonly opts: TerminalOptions = {}) {
    this.clock = opts.clock ?? systemClock;
  }

  async ask<Q extends Question>(q: Q, askOpts?: AskOptions): Promise<AnswerOf<Q["kind"]>> {
    if (askOpts?.signal?.aborted) throw new HumanCancelled("aborted", q);
    const own = this.opts.input || this.opts.output ? undefined : this.opts.terminal;
    const streams = own && own !== "stdio" ? openTerminal(own) : undefined;
    try {
      return await this.askAt(
        q,
        streams?.input ?? this.opts.input,
        streams?.output ?? this.opts.output,
        askOpts,
      );
    } finally {
      streams?.close();
    }
  }

  private async askAt<Q extends Question>(
    q: Q,
    input: NodeJS.ReadableStream | undefined,
    output: NodeJS.WritableStream | undefined,
    askOpts: AskOptions | undefined,
  ): Promise<AnswerOf<Q["kind"]>> {
    const out = output ?? process.stdout;
    const width = (out as { columns?: number }).columns ?? 80;
    const ms = perKind(this.opts.timeoutMs, q.kind);
    const policy = perKind(this.opts.onTimeout, q.kind) ?? "defer";

    out.write("\n" + renderQuestion(q, { width }));
    const timer = new AbortController();
    let handle: NodeJS.Timeout | undefined;
    if (ms !== undefined && ms > 0) {
      const then = answerText(policyAnswer(policy, q, { at: "" }));
      out.write(chalk.dim(`(no answer in ${seconds(ms)} → policy:${policy}: ${then})`) + "\n");
      handle = setTimeout(() => timer.abort(), ms);
    }
    const signals = [timer.signal, ...(askOpts?.signal ? [askOpts.signal] : [])];
    const ctx: Ctx = { input, output, signal: AbortSignal.any(signals) };
    try {
      prompts ??= await import("@inquirer/prompts");
      const raw = await this.prompt(q, ctx);
      return checkAnswer(q, { ...raw, answered_by: "terminal", at: this.clock.iso() });
    } catch (e) {
      if (timer.signal.aborted && !askOpts?.signal?.aborted) {
        const note = `no answer at the terminal within ${seconds(ms!)}`;
        out.write(chalk.yellow(`\n${note}: policy:${policy} answers\n`));
        return policyAnswer(policy, q, { at: this.clock.iso(), note });
      }
      if (errorName(e) === "ExitPromptError") throw new HumanCancelled("interrupt", q, { cause: e });
      if (errorName(e) === "AbortPromptError") throw new HumanCancelled("aborted", q, { cause: e });
      throw e;
    } finally {
      clearTimeout(handle);
    }
  }

  /** The answer's own fields (kind, choice, ...) from the prompts; who/when are added by ask(). */
  private async prompt(q: Question, ctx: Ctx): Promise<Record<string, unknown>> {
    switch (q.kind) {
      case "tool_failure":
        return this.toolFailure(q, ctx);
      case "clarification": {
        const text = (await ui().input({ message: "Your answer (empty: no answer):" }, ctx)).trim();
        return text
          ? { kind: "clarification", choice: "answer", text }
          : { kind: "clarification", choice: "no_answer" };
      }
      case "approval": {
        const choice = await ui().select(
          {
            message: "Allow this call?",
            default: "deny",
            choices: [
              { value: "allow_once", name: "Allow once" },
              { value: "allow_always", name: `Allow ${q.tool} for the rest of this session` },
              { value: "deny", name: "Deny" },
            ],
          },
          ctx,
        );
        return { kind: "approval", choice };
      }
      case "elicitation":
        return this.elicitation(q, ctx);
      case "interrupt": {
        const choice = await ui().select(
          {
            message: "What now?",
            choices: [
              { value: "continue", name: "Go on", description: "Make the cancelled call again and carry on" },
              {
                value: "defer",
                name: "Pause",
                description: "Stop here; continue later with pda resume <id>",
              },
              { value: "abort", name: "Abort the session" },
            ],
          },
          ctx,
        );
        if (choice === "continue") return { kind: "interrupt", choice };
        const reason = choice === "abort" ? "aborted at the terminal" : "paused at the terminal";
        return { kind: "stop", question_kind: "interrupt", outcome: choice, reason };
      }
      case "in_doubt":
        return this.inDoubt(ctx);
    }
  }

  private async inDoubt(ctx: Ctx): Promise<Record<string, unknown>> {
    const choice = await ui().select(
      {
        message: "What should the step do with this call?",
        default: "skip",
        choices: [
          {
            value: "repeat",
            name: "Make it again",
            description: "It did not happen (or doing it twice is fine)",
          },
          {
            value: "give_result",
            name: "It happened: give its result",
            description: "Type the value it returned (JSON or text)",
          },
          { value: "skip", name: "Skip it", description: "The code gets a ToolError IN_DOUBT" },
          { value: "abort", name: "Abort the session" },
        ],
      },
      ctx,
    );
    if (choice === "give_result") {
      const text = await ui().input({ message: "The call's result (JSON or text):", required: true }, ctx);
      return { kind: "in_doubt", choice, value: parseGivenValue(text) };
    }
    if (choice === "abort")
      return { kind: "stop", question_kind: "in_doubt", outcome: "abort", reason: "aborted at the terminal" };
    return { kind: "in_doubt", choice };
  }

  private async toolFailure(q: ToolFailureQuestion, ctx: Ctx): Promise<Record<string, unknown>> {
    const choice = await ui().select(
      {
        message: "What should the agent do?",
        choices: [
          { value: "retry", name: "Retry the step", description: "Run the same code again" },
          { value: "edit_code", name: "Edit the code", description: "Open the code in $EDITOR, then run it" },
          {
            value: "give_result",
            name: "Give the result yourself",
            description: "Type the value this step should have returned (JSON or text)",
          },
          { value: "skip", name: "Skip this step", description: "Mark it skipped and let the agent replan" },
          { value: "abort", name: "Abort the session" },
        ],
      },
      ctx,
    );
    switch (choice) {
      case "edit_code": {
        const code = await ui().editor(
          {
            message: "Edit the code (save and close the editor to run it)",
            default: q.code,
            postfix: ".js",
            waitForUserInput: false,
            validate: (v) => (v.trim() ? true : "the code is empty"),
          },
          ctx,
        );
        return { kind: "tool_failure", choice, code };
      }
      case "give_result": {
        const text = await ui().input({ message: "The step's result (JSON or text):", required: true }, ctx);
        return { kind: "tool_failure", choice, value: parseGivenValue(text) };
      }
      case "abort":
        return {
          kind: "stop",
          question_kind: "tool_failure",
          outcome: "abort",
          reason: "aborted at the terminal",
        };
      default:
        return { kind: "tool_failure", choice };
    }
  }

  private async elicitation(q: ElicitationQuestion, ctx: Ctx): Promise<Record<string, unknown>> {
    const action = await ui().select(
      {
        message: "Answer the form?",
        choices: [
          { value: "accept", name: "Fill it in and send" },
          { value: "decline", name: "Decline", description: "Tell the server you will not answer" },
          { value: "cancel", name: "Cancel", description: "Dismiss without a choice" },
        ],
      },
      ctx,
    );
    if (action !== "accept") return { kind: "elicitation", action };
    const content: Record<string, ElicitValue> = {};
    for (const f of elicitationFields(q.requestedSchema)) {
      const v = await askField(f, ctx);
      if (v !== undefined) content[f.name] = v;
    }
    // Each field was checked as it was typed; this catches what no single field sees (e.g. unknown fields).
    return {
      kind: "elicitation",
      action,
      content: elicitationContentSchema(q.requestedSchema).parse(content),
    };
  }
}

const EMPTY = "\u0000empty";

/** One prompt for one form field, by its type; undefined for an optional field left empty. */
async function askField(f: ElicitField, ctx: Ctx): Promise<ElicitValue | undefined> {
  const message = `${f.label} ${chalk.dim(`(${fieldHint(f)}${f.required ? "" : ", optional"})`)}`;
  const check = (v: unknown) => fieldError(f, v) ?? true;
  switch (f.type) {
    case "string": {
      const v = await ui().input(
        {
          message,
          default: f.default,
          required: f.required,
          validate: (s) => (s === "" && !f.required) || check(s),
        },
        ctx,
      );
      return v === "" ? undefined : v;
    }
    case "number":
    case "integer": {
      const v = await ui().number(
        {
          message,
          default: f.default,
          required: f.required,
          step: f.type === "integer" ? 1 : "any",
          validate: (n) => (n === undefined ? !f.required || "required" : check(n)),
        },
        ctx,
      );
      return v;
    }
    case "boolean":
      return ui().confirm({ message, default: f.default ?? false }, ctx);
    case "enum": {
      const choices = f.options.map((o) => ({ value: o.value, name: o.title }));
      const v = await ui().select(
        {
          message,
          default: f.default,
          choices: f.required ? choices : [...choices, { value: EMPTY, name: "(none)" }],
        },
        ctx,
      );
      return v === EMPTY ? undefined : v;
    }
    case "multi_enum": {
      const v = await ui().checkbox(
        {
          message,
          choices: f.options.map((o) => ({
            value: o.value,
            name: o.title,
            checked: f.default?.includes(o.value),
          })),
          validate: (chosen) => check(chosen.map((c) => c.value)),
        },
        ctx,
      );
      return v.length === 0 && !f.required ? undefined : v;
    }
  }
}
