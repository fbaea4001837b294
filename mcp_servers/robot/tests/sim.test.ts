/** The simulator in-process: determinism, every error code, feedback settings, relations and success checks. */
import { describe, expect, it } from "vitest";
import {
  FAILURES_OFF,
  FAILURES_ON,
  RobotEnv,
  RobotError,
  TASK_NAMES,
  envApi,
  runExpert,
  type FailureSettings,
  type ObjectObservation,
  type RunSettingsInput,
} from "../index.js";

const env = (settings: RunSettingsInput = {}) => RobotEnv.create(settings);
const obj = (e: RobotEnv, name: string): ObjectObservation => e.detect(name);
const failures = (over: Partial<FailureSettings>): FailureSettings => ({ ...FAILURES_OFF, ...over });

/** Pick `name` at its centre (safe height, straight down) without placing it. */
function grasp(e: RobotEnv, name: string) {
  const o = obj(e, name);
  e.openGripper(Math.min(0.08, o.size[0] + 0.025));
  e.moveTo(o.position[0], o.position[1], 0.2, o.yaw);
  e.moveTo(o.position[0], o.position[1], o.position[2], o.yaw);
  return e.closeGripper();
}

describe("determinism", () => {
  it("the same task, seed and actions give the same outcome, failure modes included", async () => {
    const run = async () => {
      const e = await env({ failures: FAILURES_ON });
      const r = e.reset("stack_blocks", 7);
      await runExpert("retry-expert", envApi(e), r.task, r.goal);
      const out = JSON.stringify({ obs: e.observe(), rec: e.record() });
      e.close();
      return out;
    };
    const a = await run();
    expect(await run()).toBe(a);
    // A fresh environment in the same process, and the same environment reused, agree too.
    const e = await env({ failures: FAILURES_ON });
    e.reset("put_block_in_target", 3);
    const first = JSON.stringify(e.observe());
    e.reset("put_block_in_target", 4);
    expect(JSON.stringify(e.observe())).not.toBe(first);
    e.reset("put_block_in_target", 3);
    expect(JSON.stringify(e.observe())).toBe(first);
  });

  it("the layout does not depend on the failure modes", async () => {
    const off = await env();
    const on = await env({ failures: FAILURES_ON });
    for (const task of TASK_NAMES) {
      off.reset(task, 11);
      on.reset(task, 11);
      expect(on.observe().objects).toEqual(off.observe().objects);
    }
  });
});

describe("experts (the full seed range 0-24 runs in bench/robot.ts and pda robot bench)", () => {
  it("the plain expert solves seeds 0-4 of every task with failure modes off", async () => {
    const e = await env();
    const failed: string[] = [];
    for (const task of TASK_NAMES) {
      for (let seed = 0; seed < 5; seed++) {
        const r = e.reset(task, seed);
        await runExpert("expert", envApi(e), task, r.goal);
        const rec = e.record();
        if (!rec.success || Object.keys(rec.codes).length > 0)
          failed.push(`${task}:${seed} ${JSON.stringify(rec.codes)}`);
      }
    }
    expect(failed).toEqual([]);
  });

  it("with failure modes on, the retrying expert stays ≥ 95% on seeds 0-7 while the plain one falls short", async () => {
    const e = await env({ failures: FAILURES_ON });
    let retry = 0;
    let plain = 0;
    const codes = new Set<string>();
    const n = TASK_NAMES.length * 8;
    for (const task of TASK_NAMES) {
      for (let seed = 0; seed < 8; seed++) {
        let r = e.reset(task, seed);
        await runExpert("retry-expert", envApi(e), task, r.goal);
        const rec = e.record();
        if (rec.success) retry++;
        Object.keys(rec.codes).forEach((c) => codes.add(c));
        r = e.reset(task, seed);
        await runExpert("expert", envApi(e), task, r.goal);
        if (e.record().success) plain++;
      }
    }
    expect(retry / n).toBeGreaterThanOrEqual(0.95);
    expect(plain).toBeLessThan(retry);
    // The failures that made re-planning matter really happened.
    expect([...codes]).toEqual(expect.arrayContaining(["GRASP_MISSED"]));
  });
});

describe("motion results and error codes", () => {
  it("UNREACHABLE, INVALID_ARGS and COLLISION_TABLE leave a clear message", async () => {
    const e = await env();
    e.reset("put_block_in_target", 0);
    const far = e.moveTo(0.9, 0, 0.2, 0);
    expect(far).toMatchObject({ ok: false, error_code: "UNREACHABLE", holding: null });
    expect(far.message).toMatch(/outside the workspace/);
    expect(e.observe().gripper.position).toEqual([0, -0.25, 0.3]);
    expect(e.moveTo(Number.NaN, 0, 0.2)).toMatchObject({ error_code: "INVALID_ARGS" });
    expect(e.openGripper(0.2)).toMatchObject({ error_code: "INVALID_ARGS" });
    expect(e.executeTrajectory([])).toMatchObject({ error_code: "INVALID_ARGS", completed: 0 });
    const table = e.moveTo(0, -0.25, -0.01, 0);
    expect(table).toMatchObject({ ok: false, error_code: "COLLISION_TABLE" });
    // Stopped with the fingertips on the table (the TCP 8 mm above it).
    expect(table.gripper!.position[2]).toBeCloseTo(0.008, 3);
  });

  it("COLLISION_OBJECT stops short of the object (failures off) or pushes it (collision_push on)", async () => {
    for (const push of [false, true]) {
      const e = await env({ failures: failures({ collision_push: push }) });
      e.reset("put_block_in_target", 0);
      const b = obj(e, "red_block");
      e.moveTo(b.position[0] - 0.15, b.position[1], 0.02, 0);
      const hit = e.moveTo(b.position[0] + 0.15, b.position[1], 0.02, 0);
      expect(hit).toMatchObject({ ok: false, error_code: "COLLISION_OBJECT" });
      expect(hit.events[0]).toMatchObject({ code: "COLLISION_OBJECT", object: "red_block" });
      const after = obj(e, "red_block").position;
      const moved = Math.hypot(after[0] - b.position[0], after[1] - b.position[1]);
      if (push) expect(moved).toBeGreaterThan(0.005);
      else expect(moved).toBeLessThan(0.001);
      expect(e.observe().gripper.position[0]).toBeLessThan(b.position[0]);
    }
  });

  it("grasp codes: GRASPED, HOLDING_ALREADY, GRASP_MISSED, HOLDING_NOTHING, GRASP_WIDTH_EXCEEDED", async () => {
    const e = await env();
    e.reset("empty_container", 0);
    const ok = grasp(e, "orange_cube");
    expect(ok).toMatchObject({ ok: true, error_code: "NONE", holding: "orange_cube" });
    expect(ok.events[0]).toMatchObject({ code: "GRASPED", object: "orange_cube" });
    expect(e.closeGripper()).toMatchObject({ error_code: "HOLDING_ALREADY", holding: "orange_cube" });
    expect(e.observe().objects.find((o) => o.name === "orange_cube")).toMatchObject({ on: null, in: null });
    e.openGripper();
    const g = e.observe().gripper.position;
    e.moveTo(g[0], g[1], 0.2);
    // Closing on air misses and says where the nearest object is; closing again finds the gripper closed.
    const c = obj(e, "container");
    e.moveTo(c.position[0] - 0.2, c.position[1] - 0.2, 0.2, 0);
    e.moveTo(c.position[0] - 0.2, c.position[1] - 0.2, 0.03, 0);
    const miss = e.closeGripper();
    expect(miss).toMatchObject({ ok: false, error_code: "GRASP_MISSED", holding: null });
    expect(miss.message).toMatch(/nothing between the fingers; nearest free object/);
    expect(e.closeGripper()).toMatchObject({ error_code: "HOLDING_NOTHING" });
    // Inside the container, between its items, the fingers span the fixed container itself.
    e.openGripper();
    e.moveTo(c.position[0] - 0.2, c.position[1] - 0.2, 0.2, 0);
    const free = [
      [0, 0],
      [0.055, 0],
      [0, 0.055],
      [-0.055, 0],
      [0, -0.055],
    ].find(([dx, dy]) =>
      e
        .observe()
        .objects.filter((o) => o.in === "container")
        .every(
          (o) => Math.hypot(o.position[0] - c.position[0] - dx!, o.position[1] - c.position[1] - dy!) > 0.05,
        ),
    )!;
    e.openGripper(0.02);
    e.moveTo(c.position[0] + free[0]!, c.position[1] + free[1]!, 0.2, 0);
    e.moveTo(c.position[0] + free[0]!, c.position[1] + free[1]!, 0.03, 0);
    const wide = e.closeGripper();
    expect(wide).toMatchObject({ ok: false, error_code: "GRASP_WIDTH_EXCEEDED" });
    expect(wide.message).toMatch(/container is 0\.240 m across the fingers .*fixed/);
  });

  it("OBJECT_DROPPED when the held object slips in transit, with where it landed", async () => {
    const e = await env({ failures: failures({ slip_per_metre: 10 }) });
    e.reset("put_block_in_target", 0);
    expect(grasp(e, "red_block").holding).toBe("red_block");
    const lift = e.moveTo(obj(e, "red_block").position[0], obj(e, "red_block").position[1], 0.25);
    expect(lift).toMatchObject({ ok: false, error_code: "OBJECT_DROPPED", holding: null });
    expect(lift.events.find((ev) => ev.code === "OBJECT_DROPPED")!.message).toMatch(
      /slipped .* it landed on table/,
    );
    expect(obj(e, "red_block").on).toBe("table");
  });

  it("OBJECT_TOPPLED when a stack collapses after a release", async () => {
    const e = await env({ failures: failures({ stack_collapse: 1 }) });
    e.reset("stack_blocks", 0);
    const [a, b] = ["red_block_1", "red_block_2"].map((n) => obj(e, n));
    grasp(e, b!.name);
    e.moveTo(b!.position[0], b!.position[1], 0.25);
    e.moveTo(a!.position[0], a!.position[1], 0.25);
    e.moveTo(a!.position[0], a!.position[1], 0.045 + 0.0225 + 0.004);
    const drop = e.openGripper();
    expect(drop).toMatchObject({ ok: false, error_code: "OBJECT_TOPPLED" });
    expect(obj(e, b!.name).on).not.toBe(a!.name);
  });

  it("STEP_LIMIT after the run's action budget; trajectories stop at the first failing waypoint", async () => {
    const e = await env({ max_actions: 3 });
    e.reset("put_block_in_target", 0);
    const t = e.executeTrajectory([
      { x: 0, y: 0, z: 0.2 },
      { x: 2, y: 0, z: 0.2 },
      { x: 0, y: 0.1, z: 0.2 },
    ]);
    expect(t).toMatchObject({ ok: false, error_code: "UNREACHABLE", completed: 1 });
    expect(t.message).toMatch(/^waypoint 2:/);
    e.moveTo(0, 0, 0.25);
    expect(e.moveTo(0, 0, 0.2)).toMatchObject({ ok: false, error_code: "STEP_LIMIT" });
    expect(e.record().codes).toEqual({ UNREACHABLE: 1, STEP_LIMIT: 1 });
  });
});

describe("run settings", () => {
  it("feedback 'state' hides codes but shows the new state; 'silent' shows nothing", async () => {
    const state = await env({ feedback: "state" });
    state.reset("put_block_in_target", 0);
    const s = state.moveTo(2, 0, 0.2);
    expect(s).toMatchObject({ ok: null, error_code: null, events: [], holding: null });
    expect(s.gripper?.position).toEqual([0, -0.25, 0.3]);
    const silent = await env({ feedback: "silent" });
    silent.reset("put_block_in_target", 0);
    expect(grasp(silent, "red_block")).toEqual({
      ok: null,
      error_code: null,
      message: expect.stringMatching(/silent/),
      events: [],
      holding: null,
    });
    expect(silent.observe().gripper.holding).toBe("red_block");
  });

  it("check_task_completion can be disabled per run; finish hides success then, and ends the episode", async () => {
    const e = await env({ allow_check: false });
    e.reset("close_jar", 0);
    expect(() => e.checkTaskCompletion()).toThrow(RobotError);
    expect(e.finish(true, "I think so")).toEqual({
      finished: true,
      claimed_success: true,
      reason: "I think so",
    });
    expect(() => e.moveTo(0, 0, 0.2)).toThrow(/episode is finished/);
    expect(e.record()).toMatchObject({ success: false, claimed_success: true, finished: true });
  });

  it("misuse is a RobotError naming what to do", async () => {
    const e = await env();
    expect(() => e.observe()).toThrow(/call reset\(task, seed\) first/);
    expect(() => e.reset("fold_laundry", 0)).toThrow(
      /unknown task "fold_laundry"; tasks: put_block_in_target/,
    );
    expect(() => e.reset("meat_off_grill", 0, 5)).toThrow(/variations 0\.\.1/);
    e.reset("meat_off_grill", 0);
    expect(() => e.detect("tofu")).toThrow(/no object named "tofu"; objects: grill, tray/);
  });
});

describe("observation and success checks", () => {
  it("every task starts unsolved, with the unmet conditions named", async () => {
    const e = await env();
    for (const task of TASK_NAMES) {
      e.reset(task, 1);
      const report = e.checkTaskCompletion();
      expect(report.success, task).toBe(false);
      expect(report.conditions.some((c) => !c.met)).toBe(true);
      expect(report.conditions.find((c) => c.name === "nothing grasped")?.met).toBe(true);
    }
  });

  it("relations follow the physics: on the table, on another block, in a container, held", async () => {
    const e = await env();
    e.reset("stack_blocks", 1);
    expect(obj(e, "red_block_1")).toMatchObject({ on: "table", in: null, upright: true });
    const a = obj(e, "red_block_1");
    grasp(e, "red_block_2");
    expect(obj(e, "red_block_2").on).toBeNull();
    e.moveTo(obj(e, "red_block_2").position[0], obj(e, "red_block_2").position[1], 0.25);
    e.moveTo(a.position[0], a.position[1], 0.25);
    e.moveTo(a.position[0], a.position[1], 0.045 + 0.0225 + 0.004);
    expect(e.openGripper().events[0]!.message).toMatch(/rests on red_block_1/);
    expect(obj(e, "red_block_2")).toMatchObject({ on: "red_block_1", upright: true });
    expect(obj(e, "red_block_2").bbox.max[2]).toBeCloseTo(0.09, 2);
    e.reset("empty_container", 2);
    expect(e.observe().objects.filter((o) => o.in === "container")).toHaveLength(3);
  });

  it("a solved episode passes every condition; undoing it names the condition that fails", async () => {
    const e = await env();
    const r = e.reset("close_jar", 2);
    await runExpert("expert", { ...envApi(e), finish: async () => undefined }, r.task, r.goal);
    expect(e.checkTaskCompletion().conditions.every((c) => c.met)).toBe(true);
    // Take the lid off again and put it on the table: "lid on <jar>" fails and says where the lid is.
    expect(grasp(e, "lid").holding).toBe("lid");
    const spot = [0, -0.3] as const;
    e.moveTo(obj(e, "lid").position[0], obj(e, "lid").position[1], 0.2);
    e.moveTo(spot[0], spot[1], 0.2);
    e.moveTo(spot[0], spot[1], 0.02);
    e.openGripper();
    const after = e.checkTaskCompletion();
    expect(after.success).toBe(false);
    expect(after.conditions.filter((c) => !c.met).map((c) => [c.name, c.detail])).toEqual([
      [`lid on ${String(r.goal.jar)}`, "lid rests on table"],
      [`lid centred on ${String(r.goal.jar)}`, expect.stringMatching(/mm off/)],
    ]);
  });
});
