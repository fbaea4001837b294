/**
 * Agent teams under test: the loop harness (real math server, real SQLite store) plus an agents.yaml text, one
 * scripted model whose roles are per agent ("adder.decision"), and every loop event collected.
 */
import { Profile } from "../../config/index.js";
import { ModelError, type RawCompletion, type RawTurn } from "../../core/index.js";
import {
  ScriptedTransport,
  StructuredProvider,
  type ModelPrice,
  type Script,
  type Transport,
} from "../../llm/index.js";
import { type LoopDeps, type LoopEvent } from "../kernel/index.js";
import { AgentTeam, parseAgentsConfig, type TeamLoop, type TeamOptions } from "../team/index.js";
import type { Harness } from "./harness.js";

export interface TeamRun {
  team: AgentTeam;
  loop: TeamLoop;
  transport: ScriptedTransport;
  events: LoopEvent[];
}

export function teamRun(
  h: Harness,
  yaml: string,
  root: string,
  script: Script,
  options: {
    profile?: Partial<Profile>;
    team?: Partial<TeamOptions>;
    deps?: Partial<LoopDeps>;
    /** A price for the scripted model, so sessions spend money. */
    price?: ModelPrice;
  } = {},
): TeamRun {
  const transport = new ScriptedTransport(script);
  const model = new StructuredProvider(transport, {
    costs: options.price ? { [transport.model]: options.price } : {},
  });
  const events: LoopEvent[] = [];
  const team = new AgentTeam({
    config: parseAgentsConfig("agents.yaml", yaml, h.dir),
    ...options.team,
  });
  const base: LoopDeps = {
    models: { perception: model, decision: model },
    host: h.hub,
    recorder: h.store,
    profile: Profile.parse(options.profile ?? {}),
    onEvent: (e) => events.push(e),
    ...options.deps,
  };
  return { team, loop: team.loop(root, base), transport, events };
}

/** A model that never answers: its call ends only when the caller aborts it. */
export class HangingTransport implements Transport {
  readonly provider = "hanging";
  readonly model = "never-answers";
  readonly turns: RawTurn[] = [];
  complete(turn: RawTurn): Promise<RawCompletion> {
    this.turns.push(turn);
    return new Promise((_, reject) => {
      const abort = () => reject(new ModelError("MODEL_TIMEOUT", "the call was cancelled while waiting"));
      if (turn.signal?.aborted) abort();
      else turn.signal?.addEventListener("abort", abort, { once: true });
    });
  }
}

/** A sub-agent's decision: one CODE step in a one-line plan. */
export function subCode(source: string, description = "do the task and report") {
  return {
    plan_text: ["Step 0: do the task and report"],
    step_index: 0,
    description,
    type: "CODE",
    code: source,
  };
}
