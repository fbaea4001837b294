/**
 * The moves of the loop and the state they share: the loop runs `while (next.kind !== "end")` over `Next`; the
 * modules that make its moves (model-moves.ts, human-moves.ts) take the context and the drive's state and return
 * the move after theirs.
 */
import {
  BudgetExceeded,
  Cancelled,
  type AgentSession,
  type Clock,
  type DecisionOutput,
  type PerceptionSnapshot,
  type PlanReason,
  type SessionStatus,
  type Step,
  type ToolHost,
} from "../../core/index.js";
import type { Question } from "../../hil/index.js";
import type { HumanDeps } from "./human.js";
import type { LoopDeps, MemoryService } from "./deps.js";
import type { SessionLog } from "./session-log.js";
import type { SpendAccount } from "./spend.js";
import type { StepJournal } from "./journal.js";

export type Next =
  /** `retried`: the model's last reply for this move could not be used, and the move is being made again. */
  | { kind: "start"; retried?: boolean }
  | {
      kind: "decide";
      mode: "initial" | "mid_session";
      snapshot: PerceptionSnapshot;
      guidance?: string;
      reason: PlanReason;
      trigger: string;
      retried?: boolean;
    }
  | { kind: "step"; decision: DecisionOutput }
  | { kind: "run_code"; step: Step }
  | { kind: "judge"; step: Step; retried?: boolean }
  /** `step` is the step the question is about; absent for questions about no step (interrupts, unusable output). */
  | { kind: "ask"; question: Question; step?: Step }
  | { kind: "end" };
export type Decide = Extract<Next, { kind: "decide" }>;

/** What the loop's moves share for the loop's lifetime. */
export interface LoopContext {
  deps: LoopDeps;
  clock: Clock;
  log: SessionLog;
}

/** The state of one drive of a session (a run, or a resume). */
export interface Run {
  s: AgentSession;
  stepIndex: number | undefined;
  memory: string;
  host: ToolHost;
  /** The query as the prompts see it: the original with blocklisted terms taken out (and said so). */
  query: string;
  queryFindings: string;
  /** Tool reliability for the decision prompt and the ranking, read from memory once per drive. */
  toolStats: string;
  toolStatRows?: ReturnType<NonNullable<MemoryService["toolStatRows"]>>;
  /** The signal for the move in flight: the session's, plus Ctrl-C interrupts of this one move. */
  signal?: AbortSignal;
  /** The human channel for this run, with its own count of time spent waiting on the person. */
  human?: HumanDeps;
  /** What the session (with its sub-agents) spent, against its budgets and its callers'. */
  account: SpendAccount;
  /** The durable-step log of this drive's CODE steps. */
  journal: StepJournal;
}

/** Ends the session: the loop stops at the `end` move this returns. */
export function end(s: AgentSession, status: SessionStatus, answer: string | null, reason?: string): Next {
  s.status = status;
  s.status_reason = reason;
  s.state.final_answer = answer;
  s.state.original_goal_achieved = status === "succeeded";
  return { kind: "end" };
}

/** The same decision again, with `text` added to what the model is told. */
export function withGuidance(next: Decide, text: string): Decide {
  return { ...next, guidance: [next.guidance, text].filter(Boolean).join("\n") };
}

/** Throws BudgetExceeded when a budget of this session or of a caller is used up, Cancelled when the session was cancelled. */
export function checkBudgets(run: Run, signal: AbortSignal | undefined): void {
  const stop = run.account.stop();
  if (stop) throw new BudgetExceeded(stop.code, stop.message);
  if (signal?.aborted) throw new Cancelled("the session was cancelled");
}
