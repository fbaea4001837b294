/**
 * The gripper's actions on an episode: move along a straight line, close, open. Each returns the full
 * result (code, message, events); the environment decides how much of it the caller sees.
 */
import {
  dist2d,
  lerp,
  norm,
  quatFromYaw,
  quatMul,
  rotate,
  sub,
  toLocal2d,
  wrapAngle,
  type Vec3,
} from "./geometry.js";
import {
  enclosures,
  fingertipZ,
  GRIPPER,
  gripperBoxes,
  inWorkspace,
  WORKSPACE,
  type GripperPose,
} from "./gripper.js";
import type { Episode } from "./episode.js";
import { PHYSICS, type QueryBox } from "./physics.js";
import type { ErrorCode, MotionEvent } from "./schemas.js";

export interface ActionOutcome {
  code: ErrorCode;
  message: string;
  events: MotionEvent[];
}

const fmt = (p: readonly number[]) => `(${p.map((v) => v.toFixed(3)).join(", ")})`;

/** An object's box (cylinders as their bounding box) at a pose, shrunk so resting contact is not overlap. */
function objectBox(
  ep: Episode,
  name: string,
  pose: { position: Vec3; rotation: QueryBox["rotation"] },
): QueryBox {
  const shape = ep.scene.get(name).spec.shape;
  const size: Vec3 =
    shape.kind === "cylinder"
      ? [2 * shape.radius, 2 * shape.radius, shape.height]
      : shape.kind === "box"
        ? shape.size
        : [0, 0, 0];
  return {
    size: [size[0] - 0.004, size[1] - 0.004, size[2] - 0.004],
    position: pose.position,
    rotation: pose.rotation,
  };
}

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

/** Close the fingers; an object between them is attached (as RLBench does) unless the grasp fails. */
export function closeGripper(ep: Episode): ActionOutcome {
  const events: MotionEvent[] = [];
  if (ep.held) {
    return {
      code: "HOLDING_ALREADY",
      message: `already holding ${ep.held.name}; open the gripper to release it first`,
      events,
    };
  }
  if (ep.closed) {
    return {
      code: "HOLDING_NOTHING",
      message: "the gripper is already closed and holds nothing; open it first",
      events,
    };
  }
  const found = enclosures(ep.scene, ep.pose, ep.opening, new Set());
  const target = found.find((e) => e.kind === "between" && !e.fixed);
  if (!target) {
    const wide = found.find((e) => e.kind === "too_wide");
    if (wide) {
      return {
        code: "GRASP_WIDTH_EXCEEDED",
        message: `${wide.name} is ${wide.width.toFixed(3)} m across the fingers (max opening ${GRIPPER.maxOpening} m)${wide.fixed ? " and is fixed" : ""}; nothing was grasped`,
        events,
      };
    }
    ep.closed = true;
    ep.opening = 0;
    return { code: "GRASP_MISSED", message: `nothing between the fingers; ${nearestHint(ep)}`, events };
  }
  const f = ep.failures;
  const rng = ep.failureRng;
  const spec = ep.scene.get(target.name).spec;
  const height =
    spec.shape.kind === "cylinder" ? spec.shape.height : spec.shape.kind === "box" ? spec.shape.size[2] : 0;
  const offCm = Math.max(0, target.offCentre * 100 - 0.4);
  const vertCm = Math.max(0, (Math.abs(target.dz) - 0.25 * height) * 100);
  const pMiss = Math.min(0.95, f.grasp_miss_base + f.grasp_miss_per_cm * (offCm + 0.5 * vertCm));
  if (pMiss > 0 && rng.chance(pMiss)) {
    nudge(ep, target.name);
    ep.closed = true;
    ep.opening = 0;
    const where = `${target.name} is now at ${fmt(ep.scene.pose(target.name).position)}`;
    return {
      code: "GRASP_MISSED",
      message: `the fingers closed but ${target.name} slipped out (grasp ${(target.offCentre * 1000).toFixed(0)} mm off its centre); ${where}`,
      events: [{ code: "GRASP_MISSED", object: target.name, message: where }],
    };
  }
  ep.attach(target.name, target.offCentre);
  ep.closed = true;
  ep.opening = Math.min(GRIPPER.maxOpening, target.width);
  events.push({
    code: "GRASPED",
    object: target.name,
    message: `grasped ${target.name} (${target.width.toFixed(3)} m wide)`,
  });
  return { code: "NONE", message: `grasped ${target.name}`, events };
}

/** A missed grasp squeezes the object a little sideways (if there is room). */
function nudge(ep: Episode, name: string): void {
  const rng = ep.failureRng;
  const pose = ep.scene.pose(name);
  const side = rng.chance(0.5) ? 1 : -1;
  const d = rng.uniform(0.004, 0.012) * side;
  const q = quatFromYaw(ep.pose.yaw);
  const dir = rotate(q, [0, 1, 0]);
  const position: Vec3 = [pose.position[0] + dir[0] * d, pose.position[1] + dir[1] * d, pose.position[2]];
  const rotation = quatMul(quatFromYaw(rng.uniform(-0.15, 0.15)), pose.rotation);
  if (ep.scene.overlaps(objectBox(ep, name, { position, rotation }), new Set([name])).length > 0) return;
  ep.scene.teleport(name, { position, rotation });
  ep.scene.settle(120);
}

function nearestHint(ep: Episode): string {
  let best: { name: string; d: number } | null = null;
  for (const [name, o] of ep.scene.objects) {
    if (o.spec.fixed) continue;
    const d = dist2d(o.body ? ep.scene.pose(name).position : o.spec.position, ep.pose.position);
    if (!best || d < best.d) best = { name, d };
  }
  if (!best) return "no free object on the table";
  const c = ep.scene.pose(best.name).position;
  const [lx, ly] = toLocal2d(c, ep.pose.position, 0);
  const tip = fingertipZ(ep.pose);
  return (
    `nearest free object ${best.name} has its centre at ${fmt(c)} ` +
    `(dx ${lx.toFixed(3)}, dy ${ly.toFixed(3)}, fingertips at z ${tip.toFixed(3)})`
  );
}

/** Open the fingers to `width`; a held object is released and falls or settles where it is. */
export function openGripper(ep: Episode, width: number): ActionOutcome {
  const events: MotionEvent[] = [];
  let code: ErrorCode = "NONE";
  const fail = (c: ErrorCode) => {
    if (code === "NONE") code = c;
  };
  if (!Number.isFinite(width) || width <= 0 || width > GRIPPER.maxOpening + 1e-9) {
    return {
      code: "INVALID_ARGS",
      message: `width must be in (0, ${GRIPPER.maxOpening}] m, got ${width}`,
      events,
    };
  }
  const f = ep.failures;
  const rng = ep.failureRng;
  const before = ep.snapshot();
  const released = ep.holding;
  const skip = new Set<string>();
  if (released) {
    skip.add(released);
    if (f.placement_noise > 0) {
      const p = ep.scene.pose(released);
      const moved = {
        position: [
          p.position[0] + rng.gauss(f.placement_noise),
          p.position[1] + rng.gauss(f.placement_noise),
          p.position[2],
        ] as Vec3,
        rotation: quatMul(quatFromYaw(rng.gauss(f.placement_noise * 10)), p.rotation),
      };
      if (ep.scene.overlaps(objectBox(ep, released, moved), new Set([released])).length === 0)
        ep.scene.teleport(released, moved);
    }
    ep.detach();
    ep.scene.settle();
    const support = ep.facts().on.get(released) ?? null;
    const supportObj = support ? ep.scene.objects.get(support) : undefined;
    if (
      supportObj &&
      !supportObj.spec.fixed &&
      supportObj.spec.type === "block" &&
      rng.chance(f.stack_collapse)
    ) {
      const a = rng.uniform(-Math.PI, Math.PI);
      const m = ep.scene.mass(released);
      const c = ep.scene.pose(released).position;
      // Hard enough that the block slides off its support (a cube must travel half its width).
      const s = rng.uniform(0.7, 1.0);
      ep.scene.applyImpulse(
        released,
        [Math.cos(a) * m * s, Math.sin(a) * m * s, 0],
        [c[0], c[1], c[2] + 0.015],
      );
      ep.scene.settle();
    }
    const facts = ep.facts();
    const at = fmt(ep.scene.pose(released).position);
    events.push({
      code: "RELEASED",
      object: released,
      message: `released ${released}; it rests on ${facts.on.get(released) ?? "nothing"} at ${at}`,
    });
    const landed = facts.on.get(released) ?? null;
    if (support && supportObj && !supportObj.spec.fixed && landed !== support) {
      fail("OBJECT_TOPPLED");
      events.push({
        code: "OBJECT_TOPPLED",
        object: released,
        message: `the stack collapsed: ${released} fell from ${support} onto ${landed ?? "nothing"} at ${at}`,
      });
    } else if (!facts.upright.get(released) && before.upright.get(released) !== false) {
      fail("OBJECT_TOPPLED");
      events.push({
        code: "OBJECT_TOPPLED",
        object: released,
        message: `${released} toppled over after the release; it lies at ${at}`,
      });
    }
  }
  // Widen the fingers as far as requested, or as far as neighbours allow.
  const startOpening = ep.opening;
  let w = width;
  if (w > startOpening || ep.closed) {
    const base = released ? Math.max(startOpening, 0) : startOpening;
    for (; w > base + 1e-9; w -= 0.005) {
      const hits = new Set<string>();
      for (const b of gripperBoxes(ep.pose, w)) for (const h of ep.scene.overlaps(b, skip)) hits.add(h);
      if (hits.size === 0) break;
      if (w - 0.005 <= base + 1e-9) {
        fail("COLLISION_OBJECT");
        events.push({
          code: "COLLISION_OBJECT",
          object: [...hits][0],
          message: `the fingers could not open: ${[...hits].join(", ")} in the way`,
        });
        w = base;
        break;
      }
    }
    if (w < width - 1e-9 && code === "NONE") {
      fail("COLLISION_OBJECT");
      events.push({
        code: "COLLISION_OBJECT",
        message: `the fingers opened only to ${w.toFixed(3)} m: something is in the way`,
      });
    }
  }
  ep.opening = Math.max(0, Math.min(w, GRIPPER.maxOpening));
  ep.closed = false;
  const moved = ep.changes(before, skip);
  events.push(...moved);
  if (moved.some((e) => e.code === "OBJECT_TOPPLED")) fail("OBJECT_TOPPLED");
  const message =
    code === "NONE"
      ? released
        ? (events[0]?.message ?? `released ${released}`)
        : `gripper open to ${ep.opening.toFixed(3)} m (nothing was held)`
      : (events.find((e) => e.code === code)?.message ?? code);
  return { code, message, events };
}
