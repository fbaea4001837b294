/**
 * Robot renders from what a store holds, in process on a real store file and the real simulator: the calls
 * an episode is played from (replayed rows once, failed calls not at all), and the short reasons given when a
 * scene cannot be drawn (an unknown task, calls logged without arguments, an episode started elsewhere).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { newSession, type ToolCallRecord } from "../../core/index.js";
import { HostGuard } from "../../mcp_servers/index.js";
import { SessionStore } from "../../memory/index.js";
import { RobotRenders, StaticFiles, createApp, type RobotPanel } from "../index.js";

let dir: string;
let store: SessionStore;
let renders: RobotRenders;
const files = new StaticFiles();

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-ui-robot-"));
  store = SessionStore.open(join(dir, "pda.db"));
  renders = new RobotRenders(store);
});
afterEach(() => {
  renders.close();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

type Call = [tool: string, args: Record<string, unknown> | undefined, extra?: Partial<ToolCallRecord>];

/** A robot call's record as the loop logs it. */
function record(server: string, [tool, args, extra]: Call): ToolCallRecord {
  return {
    server,
    tool,
    ok: true,
    latency_ms: 1,
    bytes: 10,
    started_at: new Date().toISOString(),
    state: "done",
    ...(args ? { args_json: JSON.stringify(args) } : {}),
    ...extra,
  };
}

/**
 * A finished session with one CODE step whose robot calls are `calls`, as the loop logs them; `before`, calls
 * logged ahead of the step in no step (the episode's reset `pda robot bench` makes for the session).
 */
function session(id: string, calls: Call[], server = "robot", parent?: string, before: Call[] = []): void {
  const now = new Date().toISOString();
  const s = newSession("move the robot", id, now);
  store.startSession(parent ? { ...s, parent_session_id: parent } : s);
  for (const c of before) store.recordToolCall(id, null, record(server, c));
  store.saveStep(id, {
    index: 0,
    description: "move",
    type: "CODE",
    code: "await reset({})",
    status: "completed",
    attempts: 1,
    plan_version: 1,
  });
  calls.forEach((c, seq) => store.recordToolCall(id, 0, { ...record(server, c), seq }));
}

async function get(path: string) {
  const { app, feed } = createApp({ store, guard: new HostGuard(), files, renders });
  try {
    const r = await app.request(path, { headers: { host: "127.0.0.1:4646" } });
    return {
      status: r.status,
      type: r.headers.get("content-type"),
      cache: r.headers.get("cache-control"),
      body: Buffer.from(await r.arrayBuffer()),
    };
  } finally {
    feed.stop();
  }
}

async function panel(id: string): Promise<RobotPanel | null> {
  return (JSON.parse((await get(`/api/sessions/${id}`)).body.toString()) as { robot: RobotPanel | null })
    .robot;
}

const RESET: Call = ["reset", { task: "put_block_in_target", seed: 6 }];

describe("robot renders from the store", () => {
  it("plays a replayed row once and a failed call not at all, and draws the scene at each end of the step", async () => {
    session("s-robot", [
      RESET,
      ["move_to", { x: 0.1, y: 0.2, z: 0.2 }],
      // A resumed step got the first move's outcome again without reaching the server.
      ["move_to", { x: 0.1, y: 0.2, z: 0.2 }, { state: "replayed" }],
      ["move_to", { x: 9, y: 9, z: 9 }, { ok: false, error_kind: "TOOL_ERROR" }],
      ["get_observation", { format: "json" }],
    ]);
    const robot = (await panel("s-robot"))!;
    expect(robot.note).toBeNull();
    // Played: reset, the live move, the observation.
    expect(robot.steps[0]!.before).toEqual({ reason: "no scene yet: the episode starts in this step" });
    const after = robot.steps[0]!.after as { src: string };
    expect(after.src).toMatch(/^\/robot\/s-robot\/3\.png\?v=[\w-]+$/);
    const png = await get(after.src);
    expect(png.status).toBe(200);
    expect(png.type).toBe("image/png");
    expect(png.body.subarray(1, 4).toString()).toBe("PNG");
    expect(png.cache).toMatch(/immutable/);
    // Without the address's version the image is not known to be final.
    expect((await get("/robot/s-robot/3.png")).cache).toBe("no-store");
    // Past the episode's calls: a reason, not a crash.
    const past = await get("/robot/s-robot/4.png");
    expect(past.status).toBe(400);
    expect(JSON.parse(past.body.toString())).toMatchObject({
      code: "RENDER_UNAVAILABLE",
      error: "no position 4: the episode has 3 calls",
    });
    // The scene after the reset alone is another picture than after the move.
    const reset = await get("/robot/s-robot/1.png");
    expect(reset.status).toBe(200);
    expect(reset.body.equals(png.body)).toBe(false);
  });

  it("plays a sub-agent's calls in the episode its parent reset, on both sessions' pages", async () => {
    session("s-parent", [RESET]);
    session("s-child", [["move_to", { x: 0.1, y: 0.2, z: 0.2 }]], "robot", "s-parent");
    // The child's step starts where the parent's reset left the scene and ends after its move.
    const child = (await panel("s-child"))!;
    expect(child.note).toBeNull();
    expect((child.steps[0]!.before as { src: string }).src).toMatch(/^\/robot\/s-child\/1\.png/);
    expect((child.steps[0]!.after as { src: string }).src).toMatch(/^\/robot\/s-child\/2\.png/);
    expect((await get((child.steps[0]!.after as { src: string }).src)).status).toBe(200);
    // The parent's step ran the sub-agent: its "after" includes the child's move.
    const parent = (await panel("s-parent"))!;
    expect((parent.steps[0]!.after as { src: string }).src).toMatch(/^\/robot\/s-parent\/2\.png/);
  });

  it("starts the episode at a reset logged in no step (pda robot bench's), so the first step has a before", async () => {
    session(
      "s-prior",
      [
        ["get_observation", { format: "json" }],
        ["move_to", { x: 0.1, y: 0.2, z: 0.2 }],
      ],
      "robot",
      undefined,
      [RESET],
    );
    const robot = (await panel("s-prior"))!;
    expect(robot.note).toBeNull();
    // Played: the reset (before the step), the observation and the move (the step's).
    const before = robot.steps[0]!.before as { src: string };
    const after = robot.steps[0]!.after as { src: string };
    expect(before.src).toMatch(/^\/robot\/s-prior\/1\.png\?v=[\w-]+$/);
    expect(after.src).toMatch(/^\/robot\/s-prior\/3\.png\?v=[\w-]+$/);
    const [b, a] = [await get(before.src), await get(after.src)];
    for (const png of [b, a]) {
      expect(png.status).toBe(200);
      expect(png.body.subarray(1, 4).toString()).toBe("PNG");
    }
    // The step moved the gripper: another picture after it than the reset's scene before it.
    expect(a.body.equals(b.body)).toBe(false);
    // The same episode logged inside the step draws the same scene after the same calls.
    session("s-inside", [
      RESET,
      ["get_observation", { format: "json" }],
      ["move_to", { x: 0.1, y: 0.2, z: 0.2 }],
    ]);
    const inside = (await panel("s-inside"))!;
    expect((await get((inside.steps[0]!.after as { src: string }).src)).body.equals(a.body)).toBe(true);
    expect((await get("/robot/s-inside/1.png")).body.equals(b.body)).toBe(true);
  });

  it("says why when the task is unknown or the calls were logged without arguments", async () => {
    session("s-task", [["reset", { task: "juggle", seed: 1 }]]);
    const unknown = await get("/robot/s-task/1.png");
    expect(unknown.status).toBe(400);
    expect(JSON.parse(unknown.body.toString()).error).toMatch(/^call 1 \(reset\): unknown task "juggle"/);

    session("s-old", [RESET, ["move_to", undefined]]);
    expect((await panel("s-old"))!.note).toMatch(/logged without their arguments/);
    const old = await get("/robot/s-old/2.png");
    expect(JSON.parse(old.body.toString()).error).toBe("call 2 (move_to) was logged without its arguments");
  });

  it("shows nothing for a session that never used the robot, and a note for an episode reset elsewhere", async () => {
    session("s-math", [["add", { a: 2, b: 3 }]], "math");
    expect(await panel("s-math")).toBeNull();
    session("s-bench", [["move_to", { x: 0.1, y: 0.2, z: 0.2 }]]);
    const bench = (await panel("s-bench"))!;
    expect(bench.note).toMatch(/started outside this session/);
    expect(bench.steps[0]!.after).toEqual({
      reason: "no scene: the episode was not started in these calls",
    });
  });
});
