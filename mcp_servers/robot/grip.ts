/** Closing (grasp by attachment, or a miss) and opening (release, placement noise, stack collapse) the gripper. */
import { dist2d, quatFromYaw, quatMul, rotate, toLocal2d, type Vec3 } from "./geometry.js";
import { enclosures, fingertipZ, GRIPPER, gripperBoxes } from "./gripper.js";
import type { Episode } from "./episode.js";
import type { ErrorCode, MotionEvent } from "./schemas.js";
import { fmt, objectBox, type ActionOutcome } from "./outcome.js";

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
