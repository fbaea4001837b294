/**
 * A robot session's pictures: the episode is played again in the simulator from the robot tool calls the store
 * logged (arguments included), and the scene is drawn before and after each CODE step. A session and its
 * sub-agents share one episode, so the calls of the whole tree count, in the order they were logged; the
 * simulator is deterministic, so the same calls give the same scene. A call logged in no step counts like the
 * others: `pda robot bench --model` logs the reset it makes before the session runs that way, so the episode
 * starts there and the first step has a scene before it.
 */
import { createHash } from "node:crypto";
import { PdaError } from "../core/index.js";
import type { SessionStore, Timeline, ToolCallRow } from "../memory/index.js";

/** Tools that change the scene; the other robot tools only look. */
const ACTS = new Set(["reset", "move_to", "execute_trajectory", "open_gripper", "close_gripper"]);
const LOOKS = new Set(["get_observation", "detect_object", "get_image", "check_task_completion", "finish"]);
/** Width of a render in pixels. */
export const RENDER_SIZE = 480;

/** One side of a step: the image's address, or why there is none. */
export type RenderRef = { src: string } | { reason: string };

export interface RobotPanel {
  /** Renders by step index (CODE steps that used the robot). */
  steps: Record<number, { before: RenderRef; after: RenderRef }>;
  /** Why the session's episode cannot be drawn, or what is off about it. */
  note: string | null;
}

interface Episode {
  /** Calls to play, in order: done, ok, not a replay of an earlier row. */
  calls: ToolCallRow[];
  /** prefix[k] identifies calls[0..k): an image's address carries it, so the address names its content. */
  prefix: string[];
  /** Per step of the viewed session: [before, after] positions in `calls`. */
  steps: Map<number, [number, number]>;
  note: string | null;
}

function tree(store: SessionStore, id: string): string[] {
  const out = [id];
  for (let i = 0; i < out.length; i++) for (const c of store.childSessions(out[i]!)) out.push(c.session_id);
  return out;
}

function parseArgs(c: ToolCallRow): Record<string, unknown> | undefined {
  if (c.args_json === undefined) return undefined;
  try {
    const v = JSON.parse(c.args_json) as unknown;
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The robot server's id: the server a scene-changing robot tool was called on. */
function robotServer(calls: readonly ToolCallRow[]): string | undefined {
  return (calls.find((c) => c.tool === "reset") ?? calls.find((c) => ACTS.has(c.tool)))?.server;
}

/**
 * The episode a session took part in, from the store only (no simulation): undefined when the session's tree
 * never used the robot.
 */
function episodeOf(store: SessionStore, t: Timeline): Episode | undefined {
  const own = t.events.flatMap((e) => (e.kind === "step" ? e.tool_calls : e.kind === "tool" ? [e.call] : []));
  const children = store.childSessions(t.session.session_id);
  if (!own.some((c) => ACTS.has(c.tool) || LOOKS.has(c.tool)) && children.length === 0) return undefined;
  // A sub-agent's episode was started by an ancestor: play from the top of the tree.
  let root = t.session.session_id;
  for (let p = t.session.parent_session_id; p; p = store.getSession(p).parent_session_id ?? null) root = p;
  const all = tree(store, root)
    .flatMap((id) => store.toolCalls({ session_id: id, limit: 1_000_000 }))
    .sort((a, b) => a.id - b.id);
  const server = robotServer(all);
  if (server === undefined) return undefined;
  const robot = all.filter((c) => c.server === server && (ACTS.has(c.tool) || LOOKS.has(c.tool)));
  // Only what happened, once: failed calls changed nothing, a `replayed` row repeats an earlier live one,
  // and a call in flight or in doubt has no known outcome.
  const calls = robot.filter((c) => c.ok && (c.state === undefined || c.state === "done"));
  let note: string | null = null;
  if (!calls.some((c) => c.tool === "reset"))
    note =
      "The episode was started outside this session (no reset call logged), so its scene cannot be drawn.";
  else if (calls.some((c) => ACTS.has(c.tool) && c.args_json === undefined))
    note =
      "Some robot calls were logged without their arguments (an older store): their scenes are not drawn.";
  const prefix = [""];
  for (const c of calls)
    prefix.push(
      createHash("sha1")
        .update(`${prefix.at(-1)}|${c.id}|${c.tool}|${c.args_json ?? ""}`)
        .digest("base64url")
        .slice(0, 16),
    );

  // Which step of the viewed session each call belongs to: its own calls by their step, its sub-agents'
  // calls by the step running when they started.
  const id = t.session.session_id;
  const starts = t.events.flatMap((e) =>
    e.kind === "step" && e.step.type === "CODE" ? [{ index: e.step.index, at: e.at }] : [],
  );
  const descendants = new Set(tree(store, id).slice(1));
  const owner = calls.map((c) => {
    if (c.session_id === id) return c.step_index;
    if (!descendants.has(c.session_id)) return null;
    let s: number | null = null;
    for (const st of starts) if (st.at <= c.started_at) s = st.index;
    return s;
  });
  const steps = new Map<number, [number, number]>();
  for (const { index } of starts) {
    const mine = owner.flatMap((o, i) => (o === index ? [i] : []));
    if (mine.length) steps.set(index, [mine[0]!, mine.at(-1)! + 1]);
  }
  return { calls, prefix, steps, note };
}

type Env = import("../mcp_servers/robot/index.js").RobotEnv;

/** The simulator partway through an episode's calls, with the images drawn so far. */
interface Player {
  env: Env;
  /** prefix of the calls applied so far. */
  at: number;
  applied: string;
  images: Map<string, Buffer>;
  /** The first call whose outcome differs from the log (a server run with failure modes, say). */
  diverged: string | null;
  /** Why the scene at the current position cannot be drawn (unknown task, missing arguments). */
  broken: string | null;
}

function num(v: unknown): number {
  return typeof v === "number" ? v : NaN;
}

/** Whether `c`'s logged outcome is what the simulator just gave (motion tools report an error_code). */
function sameOutcome(c: ToolCallRow, got: unknown): boolean {
  if (c.result_json === undefined) return true;
  try {
    const logged = JSON.parse(c.result_json) as { error_code?: unknown } | null;
    const code = logged?.error_code;
    return code === undefined || code === null || code === (got as { error_code?: unknown }).error_code;
  } catch {
    return true;
  }
}

/**
 * The renders of robot sessions, made on demand and kept: a few episodes' simulators stay open so the
 * images of a page (asked for in step order, lazily) cost one pass over the calls.
 */
export class RobotRenders {
  private readonly players = new Map<string, Player>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: SessionStore,
    private readonly keep = 4,
  ) {}

  /** Free the simulators kept open. */
  close(): void {
    for (const p of this.players.values()) p.env.close();
    this.players.clear();
  }

  /** What the session page shows about the robot; null for a session that never used it. */
  panel(t: Timeline): RobotPanel | null {
    const ep = episodeOf(this.store, t);
    if (!ep) return null;
    const id = t.session.session_id;
    const firstReset = ep.calls.findIndex((c) => c.tool === "reset");
    const ref = (pos: number): RenderRef => {
      if (firstReset < 0) return { reason: "no scene: the episode was not started in these calls" };
      if (pos <= firstReset) return { reason: "no scene yet: the episode starts in this step" };
      return { src: `/robot/${id}/${pos}.png?v=${ep.prefix[pos]}` };
    };
    const steps: RobotPanel["steps"] = {};
    for (const [index, [before, after]] of ep.steps)
      steps[index] = { before: ref(before), after: ref(after) };
    const diverged = this.players.get(id)?.diverged;
    return {
      steps,
      note: ep.note ?? (diverged ? `The replayed episode differs from the log: ${diverged}` : null),
    };
  }

  /**
   * The PNG of session `id`'s episode after its first `pos` calls, and whether it is final (the address's
   * version `v` names these very calls, so the image never changes).
   */
  image(id: string, pos: number, v: string | undefined): Promise<{ png: Buffer; immutable: boolean }> {
    const run = this.queue.then(() => this.draw(id, pos, v));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async draw(id: string, pos: number, v: string | undefined) {
    const t = this.store.timeline(id);
    const ep = episodeOf(this.store, t);
    if (!ep) throw new RenderError("this session never used the robot");
    if (!Number.isInteger(pos) || pos < 0 || pos > ep.calls.length)
      throw new RenderError(`no position ${pos}: the episode has ${ep.calls.length} calls`);
    const key = ep.prefix[pos]!;
    let p = this.players.get(id);
    // The images drawn so far stay good while the calls played are still the log's first ones.
    if (p && p.applied !== ep.prefix[p.at]) p = undefined;
    const cached = p?.images.get(key);
    if (cached) return { png: cached, immutable: v === key };
    if (!p || p.at > pos) p = await this.fresh(id);
    while (p.at < pos) this.apply(p, ep.calls[p.at]!, p.at++);
    p.applied = ep.prefix[p.at]!;
    if (p.broken) throw new RenderError(p.broken);
    const png = p.env.image("top", RENDER_SIZE);
    p.images.set(key, png);
    return { png, immutable: v === key };
  }

  private async fresh(id: string): Promise<Player> {
    this.players.get(id)?.env.close();
    this.players.delete(id);
    // The simulator (and its physics engine) loads only when a robot session is looked at.
    const { RobotEnv } = await import("../mcp_servers/robot/index.js");
    const p: Player = {
      env: await RobotEnv.create(),
      at: 0,
      applied: "",
      images: new Map(),
      diverged: null,
      broken: "no scene yet",
    };
    this.players.set(id, p);
    while (this.players.size > this.keep) {
      const [oldest, old] = this.players.entries().next().value!;
      old.env.close();
      this.players.delete(oldest);
    }
    return p;
  }

  /** Play one logged call on the simulator. */
  private apply(p: Player, c: ToolCallRow, n: number): void {
    if (!ACTS.has(c.tool)) return;
    const a = parseArgs(c);
    if (!a) {
      p.broken = `call ${n + 1} (${c.tool}) was logged without its arguments`;
      return;
    }
    const env = p.env;
    try {
      let got: unknown;
      switch (c.tool) {
        case "reset":
          env.reset(String(a.task), num(a.seed), a.variation === undefined ? undefined : num(a.variation));
          p.broken = null;
          return;
        case "move_to":
          got = env.moveTo(num(a.x), num(a.y), num(a.z), a.yaw === undefined ? undefined : num(a.yaw));
          break;
        case "execute_trajectory":
          got = env.executeTrajectory(
            (Array.isArray(a.waypoints) ? a.waypoints : []) as Parameters<Env["executeTrajectory"]>[0],
          );
          break;
        case "open_gripper":
          got = env.openGripper(a.width === undefined ? undefined : num(a.width));
          break;
        case "close_gripper":
          got = env.closeGripper();
          break;
      }
      if (!p.broken && !p.diverged && !sameOutcome(c, got))
        p.diverged = `call ${n + 1} (${c.tool}) logged another outcome than the simulator gives now`;
    } catch (e) {
      p.broken = `call ${n + 1} (${c.tool}): ${e instanceof Error ? e.message : String(e)}`;
    }
  }
}

/** A render that cannot be made (unknown session position, a call the simulator refuses): the page shows why. */
export class RenderError extends PdaError<"RENDER_UNAVAILABLE"> {
  constructor(message: string) {
    super("RENDER_UNAVAILABLE", message);
  }
}
