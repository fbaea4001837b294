/**
 * What the session page shows, computed on the server from the store's timeline: each plan version's diff
 * against the one before, each step's code highlighted, each model call numbered so its prompt can be fetched
 * on demand, and the sub-agent sessions. Highlighted code is the only HTML sent; highlight.js escapes it.
 */
import { createHash } from "node:crypto";
import { diffArrays } from "diff";
import { createRequire } from "node:module";
import type { SessionListItem, SessionStore, Timeline, TimelineEvent } from "../memory/index.js";
import type { ResumeState, Resumer } from "./answer.js";
import type { ReplayState, Replayer } from "./replay.js";
import type { RobotPanel, RobotRenders } from "./robot.js";

/**
 * highlight.js is loaded without its type declarations: they pull in the DOM lib, whose fetch types then
 * clash with Node's across the whole program. The part used here is this small.
 */
interface Highlighter {
  registerLanguage(name: string, language: unknown): void;
  highlight(code: string, options: { language: string; ignoreIllegals: boolean }): { value: string };
}
const require = createRequire(import.meta.url);
const hljs = require("highlight.js/lib/core") as Highlighter;
hljs.registerLanguage("javascript", require("highlight.js/lib/languages/javascript"));

/** One line of a plan diff: added, removed or kept. */
export interface DiffLine {
  op: "+" | "-" | " ";
  text: string;
}

export type PageEvent =
  | (Extract<TimelineEvent, { kind: "plan" }> & { diff: DiffLine[] })
  | (Extract<TimelineEvent, { kind: "step" }> & { code_html: string | null })
  | (Extract<TimelineEvent, { kind: "llm" }> & { n: number })
  | Exclude<TimelineEvent, { kind: "plan" | "step" | "llm" }>;

export interface SessionPage {
  session: Timeline["session"];
  usage: Timeline["usage"];
  events: PageEvent[];
  children: SessionListItem[];
  /** The question a session awaiting a human waits on, as hil/ typed it (the page's answer form). */
  pending_human: Record<string, unknown> | null;
  /** What became of an answer given from the page, while this server runs. */
  resume: ResumeState | null;
  /** The last replay of this session started from the page, while this server runs; null when none. */
  replay: ReplayState | null;
  /** Whether this server lets the page start a replay (pda ui --replay). */
  can_replay: boolean;
  /** A robot session's renders before and after each step; null for a session that never used the robot. */
  robot: RobotPanel | null;
  /** Changes whenever anything shown changes, so a live page re-renders only then. */
  version: string;
}

/**
 * Results kept by their input: highlighting and plan diffs were most of a page's server time (a 50-step
 * page highlights 50 blocks and diffs every replan), and a live page is rebuilt on every write to the
 * store while its code and plans stay the same. Keyed by the text itself, so a changed text is never
 * served stale; the oldest entries go first once the bound is reached.
 */
class Memo<T> {
  private readonly map = new Map<string, T>();

  constructor(private readonly max: number) {}

  get(key: string, make: () => T): T {
    const hit = this.map.get(key);
    if (hit !== undefined) return hit;
    const value = make();
    if (this.map.size >= this.max) this.map.delete(this.map.keys().next().value!);
    this.map.set(key, value);
    return value;
  }
}

const highlighted = new Memo<string>(5000);
const diffs = new Memo<DiffLine[]>(2000);

export function highlight(code: string): string {
  return highlighted.get(
    code,
    () => hljs.highlight(code, { language: "javascript", ignoreIllegals: true }).value,
  );
}

export function planDiff(before: readonly string[], after: readonly string[]): DiffLine[] {
  // JSON keeps the two lists apart whatever their lines hold.
  return diffs.get(JSON.stringify([before, after]), () => {
    const out: DiffLine[] = [];
    for (const part of diffArrays([...before], [...after])) {
      const op = part.added ? "+" : part.removed ? "-" : " ";
      for (const text of part.value) out.push({ op, text });
    }
    return out;
  });
}

/** The page's background jobs: answers being resumed, replays (each absent when the server does not allow it). */
export interface PageJobs {
  resumer?: Resumer;
  replayer?: Replayer;
  renders?: RobotRenders;
}

export function sessionPage(store: SessionStore, id: string, jobs: PageJobs = {}): SessionPage {
  const t = store.timeline(id);
  let previous: readonly string[] = [];
  let llm = 0;
  const events = t.events.map((e): PageEvent => {
    switch (e.kind) {
      case "plan": {
        const diff = planDiff(previous, e.plan.plan_text);
        previous = e.plan.plan_text;
        return { ...e, diff };
      }
      case "step":
        return { ...e, code_html: e.step.code ? highlight(e.step.code) : null };
      case "llm":
        return { ...e, n: llm++ };
      default:
        return e;
    }
  });
  const children = store.childSessions(t.session.session_id);
  const pending =
    t.session.status === "awaiting_human"
      ? (store.getSession(t.session.session_id).pending_human ?? null)
      : null;
  const resume = jobs.resumer?.state(t.session.session_id) ?? null;
  const replay = jobs.replayer?.state(t.session.session_id) ?? null;
  const robot = jobs.renders?.panel(t) ?? null;
  // A step is rewritten in place as it runs, so the version hashes everything rather than counting rows.
  const version = createHash("sha1")
    .update(JSON.stringify([t, children, pending, resume, replay, robot]))
    .digest("base64url");
  return {
    session: t.session,
    usage: t.usage,
    events,
    children,
    pending_human: pending,
    resume,
    replay,
    can_replay: jobs.replayer !== undefined,
    robot,
    version,
  };
}
