/**
 * The loop's side of the human channel: asking (with Ctrl-C and `defer` turned into a pause), keeping every
 * answer beside the original query, and the approval gate in front of tools marked needs_approval.
 */
import {
  ToolError,
  type AgentSession,
  type Clock,
  type SessionRecorder,
  type ToolHost,
} from "../../core/index.js";
import type { LoopEvent } from "./events.js";
import {
  askOrDefer,
  Question,
  toHumanInput,
  type AnswerOf,
  type HumanChannel,
  type StopAnswer,
} from "../../hil/index.js";

export interface HumanDeps {
  channel: HumanChannel;
  recorder: SessionRecorder;
  clock: Clock;
  signal?: AbortSignal;
  /** Time spent waiting on the person (one per run): it does not count against time limits. */
  waited?: WaitClock;
  /** The live trace: a question asked, and its answer with who gave it. */
  emit?: (event: LoopEvent) => void;
}

/** Time spent waiting on a person, the wait in progress included (questions may overlap: parallel calls). */
export class WaitClock {
  private done = 0;
  private open = 0;
  private since = 0;
  constructor(private readonly now: () => number) {}

  begin(): void {
    if (this.open++ === 0) this.since = this.now();
  }

  end(): void {
    if (--this.open === 0) this.done += this.now() - this.since;
  }

  get ms(): number {
    return this.done + (this.open > 0 ? this.now() - this.since : 0);
  }
}

/** Ask one question; the answer (stop answers included) is logged and kept in state.human_inputs. */
export async function ask<Q extends Question>(
  h: HumanDeps,
  s: AgentSession,
  q: Q,
): Promise<AnswerOf<Q["kind"]>> {
  let answer: AnswerOf<Q["kind"]>;
  h.emit?.({ type: "human_ask", kind: q.kind });
  h.waited?.begin();
  try {
    answer = await askOrDefer(h.channel, q, { signal: h.signal, clock: h.clock });
  } finally {
    h.waited?.end();
  }
  const input = toHumanInput(q, answer);
  s.state.human_inputs.push(input);
  h.recorder.recordHumanInput(s.session_id, input);
  h.emit?.({ type: "human_input", input });
  return answer;
}

/** The question a paused session waits on, validated as hil/ types it. */
export function pendingQuestion(s: AgentSession): Question | undefined {
  return s.pending_human ? Question.parse(s.pending_human) : undefined;
}

/**
 * Wraps a tool host so tools marked needs_approval are asked about first: allow once, allow always (for this
 * session, kept in the session so it holds after a resume), or deny — a denied call fails with ToolError
 * TOOL_DENIED, which the step sees like any failure. A pause or an abort answered instead stops the step
 * (`halt`) and the session with it; `pda resume` runs the step again by replay and asks again.
 */
export function approvalGate(
  host: ToolHost,
  h: HumanDeps,
  s: AgentSession,
  stepIndex: () => number | undefined,
  halt?: (question: Question, answer: StopAnswer, tool: string) => never,
): ToolHost {
  return {
    tools: () => host.tools(),
    onCall: (l) => host.onCall(l),
    async call(name, args, options) {
      const info = host.tools().find((t) => t.qualified === name || (t.unique && t.name === name));
      if (info?.needsApproval && !s.approved_tools?.includes(info.qualified)) {
        const question: Question = {
          kind: "approval",
          tool: info.name,
          server: info.server,
          args,
          step_index: stepIndex(),
        };
        const answer = await ask(h, s, question);
        if (answer.kind === "stop" && answer.outcome !== "fail" && halt)
          halt(question, answer, info.qualified);
        if (answer.kind === "stop" || answer.choice === "deny") {
          const why = answer.kind === "stop" ? answer.reason : "the human denied it";
          throw new ToolError("TOOL_DENIED", info.qualified, `${info.qualified} was not approved: ${why}`);
        }
        if (answer.choice === "allow_always") (s.approved_tools ??= []).push(info.qualified);
      }
      return host.call(name, args, options);
    },
  };
}
