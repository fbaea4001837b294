/**
 * Replay: run a logged session again with the model's logged outputs played back (no model needed) against
 * the live tools, and report every step whose result differs from the log. A team session is replayed as a
 * tree: each sub-agent session the replay starts is matched to the logged session of the same caller and
 * agent that started in the same order, plays that session's own outputs, and is compared with it.
 */
import {
  ModelError,
  type AgentSession,
  type LlmCallRecord,
  type ModelProvider,
  type RawCompletion,
  type RawTurn,
} from "../../core/index.js";
import { StructuredProvider, type Transport } from "../../llm/index.js";
import type { SessionStore } from "../../memory/index.js";
import type { SubagentStart } from "../team/index.js";

export interface StepDifference {
  step: number;
  description: string;
  logged: unknown;
  replayed: unknown;
}

/** A logged session with its model calls and its sub-agents' sessions, in the order they started. */
export interface LoggedTree {
  session: AgentSession;
  calls: LlmCallRecord[];
  children: LoggedTree[];
}

/** A logged session and every sub-agent session under it. */
export function loggedTree(
  store: Pick<SessionStore, "getSession" | "llmCalls" | "childSessions">,
  id: string,
): LoggedTree {
  const session = store.getSession(id);
  return {
    session,
    calls: store.llmCalls(session.session_id),
    children: store.childSessions(session.session_id).map((c) => loggedTree(store, c.session_id)),
  };
}

/**
 * Plays back one logged session's model outputs: each turn gets the next unplayed successful call of its role,
 * with the logged usage (a planner-coder decision's planner and coder calls are rows of their own).
 */
export class ReplayTransport implements Transport {
  readonly provider = "replay";
  readonly model: string;
  private readonly played = new Set<number>();

  /** `agent`: a sub-agent's name, which its turns' roles carry in front ("pick.decision"). */
  constructor(
    private readonly calls: LlmCallRecord[],
    private readonly sessionId: string,
    private readonly agent?: string,
  ) {
    this.model = `replay:${sessionId}`;
  }

  complete(turn: RawTurn): Promise<RawCompletion> {
    try {
      return Promise.resolve(this.play(turn));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Logged outputs never played, per role. */
  unconsumed(): Record<string, number> {
    const out: Record<string, number> = {};
    this.calls.forEach((c, i) => {
      if (playable(c) && !this.played.has(i)) out[c.role] = (out[c.role] ?? 0) + 1;
    });
    return out;
  }

  private play(turn: RawTurn): RawCompletion {
    const prefix = this.agent ? `${this.agent}.` : "";
    const role = prefix && turn.role.startsWith(prefix) ? turn.role.slice(prefix.length) : turn.role;
    const i = this.calls.findIndex((c, j) => !this.played.has(j) && playable(c) && c.role === role);
    if (i < 0) {
      if ((role === "planner" || role === "coder") && !this.calls.some(isPlannerCoder))
        throw this.error(
          `the log has no planner or coder calls to play: its decisions were made by a single decision call, ` +
            `or by a planner and a coder logged together as one "decision" row (before each had its own), ` +
            `which replay does not split`,
        );
      const n = [...this.played].filter((j) => this.calls[j]!.role === role).length;
      throw this.error(`no more logged "${role}" outputs (${n} played)`);
    }
    const call = this.calls[i]!;
    this.played.add(i);
    return {
      text: JSON.stringify(call.value),
      usage: { input_tokens: call.input_tokens, output_tokens: call.output_tokens },
      ...(call.finish_reason !== undefined ? { finish_reason: call.finish_reason } : {}),
    };
  }

  private error(message: string): ModelError {
    return new ModelError("SCRIPT_EXHAUSTED", `replay of session ${this.sessionId}: ${message}`);
  }
}

/** A logged call whose output can be played back (failed calls are left out: their retry follows them). */
const playable = (c: LlmCallRecord) => c.ok && c.value !== undefined;

const isPlannerCoder = (c: LlmCallRecord) => c.role === "planner" || c.role === "coder";

const outcome = (s: AgentSession["steps"][number]) =>
  s.execution_result
    ? s.execution_result.ok
      ? { ok: true, value: s.execution_result.value }
      : { ok: false, error: s.execution_result.error?.code }
    : { type: s.type, status: s.status };

/**
 * Steps whose outcome (value, or error code) differs between the logged and the replayed session. `asLogged`
 * writes a replayed text as the log would have it (a sub-agent's report names its replayed session's id).
 */
function diffSteps(
  logged: AgentSession,
  replayed: AgentSession,
  asLogged: (text: string) => string = (t) => t,
): StepDifference[] {
  const out: StepDifference[] = [];
  const n = Math.max(logged.steps.length, replayed.steps.length);
  for (let i = 0; i < n; i++) {
    const a = logged.steps[i];
    const b = replayed.steps[i];
    const la = a ? outcome(a) : "(no such step)";
    const lb = b ? outcome(b) : "(no such step)";
    if (JSON.stringify(la) !== asLogged(JSON.stringify(lb))) {
      out.push({ step: i, description: (a ?? b)!.description, logged: la, replayed: lb });
    }
  }
  return out;
}

/** One session of a replayed tree compared with its logged counterpart. */
export interface SessionComparison {
  /** null: the replay started a sub-agent session the log does not have. */
  logged_session_id: string | null;
  /** null: the log has a sub-agent session the replay never started. */
  replayed_session_id: string | null;
  /** The agent of a sub-agent session; absent for the session replayed. */
  agent?: string;
  /** The logged session of its caller (a sub-agent session's). */
  parent_session_id?: string;
  status: { logged: string | null; replayed: string | null };
  same_answer: boolean;
  differences: StepDifference[];
  unconsumed_model_outputs: Record<string, number>;
}

interface Replaying {
  transport: ReplayTransport;
  model: ModelProvider;
  replayedId: string;
  /** Sub-agent sessions of this one already matched to a replayed session. */
  taken: Set<LoggedTree>;
}

interface Unlogged {
  session_id: string;
  /** The replayed session that called it. */
  caller: string;
  agent: string;
  model: ModelProvider;
}

/**
 * The models of a replayed session tree. The session replayed uses `root`; each sub-agent session the replay
 * starts gets, through `modelFor` (the team's TeamOptions.modelFor), a model over the logged session its
 * caller's logged session started with the same agent in the same order.
 */
export class TreeReplay {
  readonly root: ModelProvider;
  /** Logged session → its replay, for those the replay has started. */
  private readonly replays = new Map<LoggedTree, Replaying>();
  /** Replayed session id → the logged session it replays. */
  private readonly byReplayed = new Map<string, LoggedTree>();
  /** Sub-agent sessions the replay started that the log does not have. */
  private readonly unlogged: Unlogged[] = [];

  /** `rootId`: the id the replayed session will run under. */
  constructor(
    readonly logged: LoggedTree,
    readonly rootId: string,
  ) {
    this.root = this.track(logged, rootId, undefined).model;
  }

  readonly modelFor = (
    agent: { name: string },
    _role: string,
    start?: SubagentStart,
  ): ModelProvider | undefined => {
    if (!start) return undefined; // the session replayed, and agents it hands over to: the root's outputs
    const known = this.byReplayed.get(start.session_id);
    if (known) return this.replays.get(known)!.model;
    const extra = this.unlogged.find((u) => u.session_id === start.session_id);
    if (extra) return extra.model;
    const caller = this.byReplayed.get(start.parent_session_id);
    const taken = caller && this.replays.get(caller)!.taken;
    const match = caller?.children.find((c) => c.session.agent === agent.name && !taken!.has(c));
    if (!match) {
      // Not in the log: it fails at its first model call, and the comparison says so.
      const transport = new ReplayTransport([], `(none: the log has no such ${agent.name} call)`, agent.name);
      const model = replayProvider(transport);
      this.unlogged.push({
        session_id: start.session_id,
        caller: start.parent_session_id,
        agent: agent.name,
        model,
      });
      return model;
    }
    taken!.add(match);
    return this.track(match, start.session_id, agent.name).model;
  };

  /**
   * Every logged session (the one replayed first, then its sub-agents' depth first) compared with its replay,
   * then the sub-agent sessions only the replay has. `read` reads a replayed session back from the store.
   */
  compare(read: (id: string) => AgentSession): SessionComparison[] {
    const out: SessionComparison[] = [];
    const asLogged = (text: string) => {
      for (const [id, t] of this.byReplayed) text = text.replaceAll(id, t.session.session_id);
      return text;
    };
    const visit = (t: LoggedTree) => {
      const logged = t.session;
      const r = this.replays.get(t);
      const replayed = r ? read(r.replayedId) : undefined;
      out.push({
        logged_session_id: logged.session_id,
        replayed_session_id: r?.replayedId ?? null,
        ...(logged.parent_session_id
          ? { agent: logged.agent, parent_session_id: logged.parent_session_id }
          : {}),
        status: { logged: logged.status, replayed: replayed?.status ?? null },
        same_answer: !!replayed && sameAnswer(logged, replayed, asLogged),
        differences: replayed ? diffSteps(logged, replayed, asLogged) : [],
        unconsumed_model_outputs: (
          r?.transport ?? new ReplayTransport(t.calls, logged.session_id)
        ).unconsumed(),
      });
      t.children.forEach(visit);
    };
    visit(this.logged);
    for (const u of this.unlogged) {
      const replayed = read(u.session_id);
      out.push({
        logged_session_id: null,
        replayed_session_id: u.session_id,
        agent: u.agent,
        parent_session_id: this.byReplayed.get(u.caller)?.session.session_id,
        status: { logged: null, replayed: replayed.status },
        same_answer: false,
        differences: diffSteps({ ...replayed, steps: [] }, replayed),
        unconsumed_model_outputs: {},
      });
    }
    return out;
  }

  private track(logged: LoggedTree, replayedId: string, agent: string | undefined): Replaying {
    const transport = new ReplayTransport(logged.calls, logged.session.session_id, agent);
    const r: Replaying = { transport, model: replayProvider(transport), replayedId, taken: new Set() };
    this.replays.set(logged, r);
    this.byReplayed.set(replayedId, logged);
    return r;
  }
}

/** Replayed outputs are played as logged: no repair round (a repaired reply was logged as its value). */
function replayProvider(transport: ReplayTransport): ModelProvider {
  return new StructuredProvider(transport, { repair_rounds: 0 });
}

function sameAnswer(
  logged: AgentSession,
  replayed: AgentSession,
  asLogged: (text: string) => string,
): boolean {
  const answer = replayed.state.final_answer;
  return (answer === null ? null : asLogged(answer)) === logged.state.final_answer;
}

/** A session compared with its replay matches when it gave the same answer with every step alike. */
export function replayMatches(c: SessionComparison): boolean {
  return (
    c.same_answer &&
    c.differences.length === 0 &&
    c.logged_session_id !== null &&
    c.replayed_session_id !== null
  );
}
