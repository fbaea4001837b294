/**
 * What an agent team plugs into the loop (agent/team.ts), so the loop itself stays one screen of sequencing:
 * the perception and decision phases (an agent's own prompts, or a planner + coder), host functions for CODE
 * beside the tools (`agents.*`, `agent.report`, `agent.handoff`), and a stop after a CODE step (a sub-agent
 * filed its report, or control was handed over).
 */
import type { Namespaces } from "../action/index.js";
import type { AgentSession, SessionStatus, Step, GenerateResult, ModelProvider } from "../core/index.js";
import { decide, decisionPrompt, type DecisionInput, type DecisionResult } from "../decision/index.js";
import {
  perceive,
  perceptionPrompt,
  type PerceptionInput,
  type PerceptionOutput,
} from "../perception/index.js";

export interface PromptText {
  system: string;
  prompt: string;
}

/**
 * One model call a phase makes through the loop: checked against the budgets first, counted as under way while
 * it runs, then counted and logged as its own llm_calls row under `role` with `prompt` (also when it fails).
 */
export type ModelCall = <T>(
  role: string,
  model: ModelProvider,
  prompt: PromptText,
  generate: () => Promise<GenerateResult<T>>,
) => Promise<GenerateResult<T>>;

/** A model phase of one call: the prompt it would send (logged when the call fails) and the call itself. */
export interface OneCallPhase<I, O> {
  prompt(input: I): PromptText;
  run(model: ModelProvider, input: I): Promise<O>;
}

/** A model phase of several calls (a planner, then a coder): each is made, and logged, through `call`. */
export interface CallsPhase<I, O> {
  calls(input: I, call: ModelCall): Promise<O>;
}

export type Phase<I, O> = OneCallPhase<I, O> | CallsPhase<I, Omit<O, "result" | "prompt">>;
export type PerceptionPhase = Phase<PerceptionInput, PerceptionOutput>;
export type DecisionPhase = Phase<DecisionInput, DecisionResult>;

export const defaultPerception: PerceptionPhase = { prompt: perceptionPrompt, run: perceive };
export const defaultDecision: DecisionPhase = { prompt: decisionPrompt, run: decide };

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
  namespaces?(session: AgentSession, step: Step): Namespaces;
  /**
   * Called when a CODE step has run (not when a guard refused it), before its result is checked and judged:
   * host work the step left running is settled here, and a stop ends the session.
   */
  afterCode?(session: AgentSession, step: Step): Promise<LoopStop | undefined>;
}
