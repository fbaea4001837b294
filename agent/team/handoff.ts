/**
 * Handoffs: the agent holding a conversation hands it to another (routine → routine) with a reason. The
 * session stays one session; its `control` list records who held it from which step, and the agent taking
 * over continues from the last perception with the reason as guidance (AgentLoop.takeOver).
 */
import { ConfigError, systemClock, type AgentSession } from "../../core/index.js";
import { AgentLoop, type LoopDeps, type RunOptions, type SessionDriver } from "../kernel/index.js";
import type { Agent, AgentsConfig } from "./config.js";

/** A handoff asked for by a session's CODE (`agent.handoff`), taken when the agent's turn ends. */
export interface Handoff {
  from: string;
  to: string;
  reason: string;
}

/** What following handoffs needs of the team (AgentTeam provides it). */
export interface HandoffTeam {
  readonly config: AgentsConfig;
  /** Handoffs asked for, by session id. */
  readonly handoffs: Map<string, Handoff>;
  agent(name: string): Agent;
  /** The deps of `agent`'s plain loop over `base`. */
  deps(agent: Agent, base: LoopDeps): LoopDeps;
}

/**
 * The loop of the agent that holds the conversation first: a plain AgentLoop of that agent, then, for each
 * handoff its session makes, the plain loop of the agent taking over.
 */
export class TeamLoop implements SessionDriver {
  private readonly loop: AgentLoop;

  constructor(
    private readonly team: HandoffTeam,
    readonly agent: Agent,
    private readonly base: LoopDeps,
  ) {
    this.loop = new AgentLoop(team.deps(agent, base));
  }

  async run(query: string, options: RunOptions = {}): Promise<AgentSession> {
    const s = await this.loop.run(query, { ...options, agent: options.agent ?? this.agent.name });
    return this.followHandoffs(s);
  }

  /** A paused session resumes under the agent that held it when it paused. */
  async resume(session: AgentSession): Promise<AgentSession> {
    if (session.parent_session_id) {
      // Its caller has moved on without it (its report was UNKNOWN); there is nobody to report to.
      throw new ConfigError(
        `session ${session.session_id} is sub-agent ${session.agent ?? "?"}'s session, called by ${session.parent_session_id}; resume or re-run the caller instead`,
      );
    }
    const holder = holderOf(session);
    if (holder && holder !== this.agent.name) {
      if (!this.team.config.agents[holder])
        throw new ConfigError(
          `session ${session.session_id} was held by agent "${holder}", which agents.yaml no longer has`,
        );
      return new TeamLoop(this.team, this.team.agent(holder), this.base).resume(session);
    }
    return this.followHandoffs(await this.loop.resume(session));
  }

  private async followHandoffs(first: AgentSession): Promise<AgentSession> {
    const clock = this.base.clock ?? systemClock;
    const max = this.team.config.max_handoffs;
    let s = first;
    for (;;) {
      const h = this.team.handoffs.get(s.session_id);
      if (!h) return s;
      this.team.handoffs.delete(s.session_id);
      const made = (s.control?.length ?? 1) - 1;
      if (made >= max) {
        s.status = "failed";
        s.status_reason = `too many handoffs (the limit is ${max}); the last one asked for ${h.to}: ${h.reason}`;
        this.base.recorder.finishSession(s);
        this.base.onEvent?.({ type: "session_end", session: s });
        return s;
      }
      s.control ??= [{ agent: h.from, since_step: 0, at: s.created_at }];
      s.control.push({
        agent: h.to,
        since_step: s.steps.length,
        at: clock.iso(),
        from: h.from,
        reason: h.reason,
      });
      this.base.onEvent?.({
        type: "handoff",
        session_id: s.session_id,
        from: h.from,
        to: h.to,
        reason: h.reason,
      });
      const next = new AgentLoop(this.team.deps(this.team.agent(h.to), this.base));
      s = await next.takeOver(
        s,
        `Agent "${h.from}" handed the conversation to you, agent "${h.to}": ${h.reason}. Go on from where it is.`,
      );
    }
  }
}

/** The agent holding a session now: the last handoff's target, else the agent it started with. */
export function holderOf(s: AgentSession): string | undefined {
  return s.control?.at(-1)?.agent ?? s.agent;
}
