/**
 * What an agent team plugs into the loop (agent/team/team.ts), so the loop itself stays one screen of sequencing:
 * the perception and decision phases (an agent's own prompts, or a planner + coder), host functions for CODE
 * beside the tools (`agents.*`, `agent.report`, `agent.handoff`), and a stop after a CODE step (a sub-agent
 * filed its report, or control was handed over).
 */
import type { Namespaces } from "../../action/index.js";
import type { AgentSession, SessionStatus, Step, ToolError } from "../../core/index.js";
import type { Question, StopAnswer } from "../../hil/index.js";
import { decisionPhase, type DecisionPhase } from "../../decision/index.js";
import { perceptionPhase, type PerceptionPhase } from "../../perception/index.js";

export const defaultPerception: PerceptionPhase = perceptionPhase();
export const defaultDecision: DecisionPhase = decisionPhase();

/** How a session ends when a hook stops it. `running` leaves it open for the agent taking over. */
export interface LoopStop {
  status: SessionStatus;
  answer: string | null;
  reason?: string;
}

export interface LoopHooks {
  perception?: PerceptionPhase;
  decision?: DecisionPhase;
  /** Host functions for this CODE step beside the tools; the code guard is told about the same names. */
  namespaces?(session: AgentSession, step: Step, control: StepControl): Namespaces;
  /**
   * Called when a CODE step has run (not when a guard refused it), before its result is checked and judged:
   * host work the step left running is settled here, and a stop ends the session.
   */
  afterCode?(session: AgentSession, step: Step): Promise<LoopStop | undefined>;
  /**
   * Called instead of afterCode when a question inside the step stopped it: `pause` (the session waits on a
   * person, and the step runs again by replay on resume) lets the host work the step started finish, so its
   * outcome is there to replay; an abort cancels it.
   */
  afterHalt?(session: AgentSession, step: Step, pause: boolean): Promise<void>;
}

/** What a step's host functions may do to the step as a whole. */
export interface StepControl {
  /** The step ran again and took another path than its log (a different sub-agent call): it fails with `e`. */
  diverged(e: ToolError): void;
  /**
   * A sub-agent the step called paused on a question (`answer`: the defer it got): the step, and its session,
   * pause on that question too, and `pda resume` of this session resumes the sub-agent.
   */
  paused(question: Question, answer: StopAnswer, via: { agent: string; session_id: string }): void;
}
