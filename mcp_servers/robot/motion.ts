/**
 * Moving the gripper along a straight line at its speed, stepping the physics, with exact collision checks
 * for the fingers, the palm and what they hold; failure modes (pushes, slips, motion noise) come from the
 * episode's failure stream.
 */
import { lerp, norm, sub, wrapAngle, type Vec3 } from "./geometry.js";
import { fingertipZ, GRIPPER, gripperBoxes, inWorkspace, WORKSPACE, type GripperPose } from "./gripper.js";
import type { Episode } from "./episode.js";
import { PHYSICS, type QueryBox } from "./physics.js";
import type { ErrorCode, MotionEvent } from "./schemas.js";
import { fmt, objectBox, type ActionOutcome } from "./outcome.js";

function heldBox(ep: Episode, pose: GripperPose): QueryBox | null {
  const hp = ep.heldPose(pose);
  return ep.held && hp ? objectBox(ep, ep.held.name, hp) : null;
}

/** Objects the gripper (and what it holds) would overlap at `pose`. */
function overlapsAt(ep: Episode, pose: GripperPose, exclude: ReadonlySet<string>): string[] {
  const hits = new Set<string>();
  const skip = new Set(exclude);
  if (ep.holding) skip.add(ep.holding);
  for (const box of gripperBoxes(pose, ep.opening)) for (const n of ep.scene.overlaps(box, skip)) hits.add(n);
  const hb = heldBox(ep, pose);
  if (hb) for (const n of ep.scene.overlaps(hb, skip)) hits.add(n);
  return [...hits].sort();
}

/** The push a collision gives when failure modes allow it: along the motion, at the gripper's height. */
function push(ep: Episode, name: string, direction: Vec3, pose: GripperPose): void {
  const rng = ep.failureRng;
  const centre = ep.scene.pose(name).position;
  let dir: [number, number] = [direction[0], direction[1]];
  if (Math.hypot(dir[0], dir[1]) < 1e-6) dir = [centre[0] - pose.position[0], centre[1] - pose.position[1]];
  if (Math.hypot(dir[0], dir[1]) < 1e-6) {
    const a = rng.uniform(-Math.PI, Math.PI);
    dir = [Math.cos(a), Math.sin(a)];
  }
  const len = Math.hypot(dir[0], dir[1]);
  const speed = rng.uniform(0.2, 0.6);
  const m = ep.scene.mass(name);
  const at: Vec3 = [
    centre[0],
    centre[1],
    Math.max(centre[2], Math.min(fingertipZ(pose) + 0.01, centre[2] + 0.04)),
  ];
  ep.scene.applyImpulse(name, [(dir[0] / len) * m * speed, (dir[1] / len) * m * speed, 0], at);
}

/** Move the TCP in a straight line (position and yaw together) at the gripper's speed. */
export function moveGripper(ep: Episode, target: GripperPose): ActionOutcome {
  const f = ep.failures;
  const rng = ep.failureRng;
  const events: MotionEvent[] = [];
  let code: ErrorCode = "NONE";
  const fail = (c: ErrorCode) => {
    if (code === "NONE") code = c;
  };
  if (!inWorkspace(target.position)) {
    return {
      code: "UNREACHABLE",
      message:
        `${fmt(target.position)} is outside the workspace x ${WORKSPACE.x.join("..")}, y ${WORKSPACE.y.join("..")}, ` +
        `z ${WORKSPACE.z.join("..")} (m); the gripper did not move`,
      events,
    };
  }
  const start: GripperPose = { position: [...ep.pose.position], yaw: ep.pose.yaw };
  let goal: Vec3 = [...target.position];
  if (f.motion_noise > 0)
    goal = [goal[0] + rng.gauss(f.motion_noise), goal[1] + rng.gauss(f.motion_noise), goal[2]];
  const dyaw = wrapAngle(target.yaw - start.yaw);
  // The table stops the lowest point of the fingers (or of the held object) at z = 0.
  const below = Math.max(GRIPPER.tip, ep.held?.below ?? 0);
  let tableHit = false;
  let end = 1;
  if (goal[2] - below < 0) {
    tableHit = true;
    end = start.position[2] - below <= 0 ? 0 : (start.position[2] - below) / (start.position[2] - goal[2]);
  }
  const delta = sub(goal, start.position);
  const stepLen = GRIPPER.speed * PHYSICS.timestep;
  const turnStep = GRIPPER.turnRate * PHYSICS.timestep;
  const n = Math.max(
    1,
    Math.ceil(Math.max((norm(delta) * end) / stepLen, (Math.abs(dyaw) * end) / turnStep)),
  );
  const before = ep.snapshot();
  // Whatever the gripper already touches at the start, it may move away from (until it is clear of it).
  let escaping = new Set(overlapsAt(ep, start, new Set()));
  const dropped = new Set<string>();
  let stopped = false;
  for (let i = 1; i <= n; i++) {
    const t = (end * i) / n;
    const pose: GripperPose = { position: lerp(start.position, goal, t), yaw: start.yaw + dyaw * t };
    const all = overlapsAt(ep, pose, new Set());
    escaping = new Set([...escaping].filter((x) => all.includes(x)));
    const hits = all.filter((x) => !escaping.has(x) && !dropped.has(x));
    if (hits.length > 0) {
      fail("COLLISION_OBJECT");
      for (const h of hits) {
        const fixed = ep.scene.get(h).spec.fixed;
        events.push({
          code: "COLLISION_OBJECT",
          object: h,
          message: `${ep.holding && !gripperTouches(ep, pose, h) ? `the held ${ep.holding}` : "the gripper"} hit ${h} at ${fmt(pose.position)}`,
        });
        if (f.collision_push && !fixed) push(ep, h, delta, pose);
      }
      if (f.collision_push && ep.holding && rng.chance(0.5)) {
        const name = ep.detach()!;
        dropped.add(name);
        fail("OBJECT_DROPPED");
        events.push({
          code: "OBJECT_DROPPED",
          object: name,
          message: `the knock shook ${name} out of the fingers`,
        });
        ep.closed = true;
        ep.opening = 0;
      }
      stopped = true;
      break;
    }
    const stepDist = norm(sub(pose.position, ep.pose.position));
    ep.pose = pose;
    const hp = ep.heldPose(pose);
    if (hp && ep.holding) ep.scene.moveKinematic(ep.holding, hp);
    ep.scene.step();
    ep.recordPath(pose.position);
    if (ep.held && f.slip_per_metre > 0) {
      const p = f.slip_per_metre * stepDist * (ep.held.offCentre > 0.006 ? 2 : 1);
      if (rng.chance(p)) {
        const name = ep.detach()!;
        dropped.add(name);
        ep.closed = true;
        ep.opening = 0;
        fail("OBJECT_DROPPED");
        events.push({
          code: "OBJECT_DROPPED",
          object: name,
          message: `${name} slipped out of the fingers at ${fmt(pose.position)}`,
        });
      }
    }
  }
  ep.pose = { position: ep.pose.position, yaw: wrapAngle(ep.pose.yaw) };
  if (tableHit && !stopped) {
    fail("COLLISION_TABLE");
    events.push({
      code: "COLLISION_TABLE",
      message: `the ${ep.holding ? `held ${ep.holding}` : "fingertips"} touched the table; stopped at z ${ep.pose.position[2].toFixed(3)}`,
    });
  }
  if (ep.scene.moving()) ep.scene.settle();
  for (const name of dropped) {
    const facts = ep.facts();
    const ev = events.find((e) => e.code === "OBJECT_DROPPED" && e.object === name);
    if (ev)
      ev.message += `; it landed on ${facts.on.get(name) ?? "nothing"} at ${fmt(ep.scene.pose(name).position)}`;
  }
  const moved = ep.changes(before, dropped);
  events.push(...moved);
  if (moved.some((e) => e.code === "OBJECT_TOPPLED")) fail("OBJECT_TOPPLED");
  const message =
    code === "NONE"
      ? `moved to ${fmt(ep.pose.position)} yaw ${ep.pose.yaw.toFixed(2)}`
      : `${events.find((e) => e.code === code)?.message ?? code}; gripper now at ${fmt(ep.pose.position)}`;
  return { code, message, events };
}

function gripperTouches(ep: Episode, pose: GripperPose, name: string): boolean {
  const skip = new Set(ep.holding ? [ep.holding] : []);
  return gripperBoxes(pose, ep.opening).some((b) => ep.scene.overlaps(b, skip).includes(name));
}
