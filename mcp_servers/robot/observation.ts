/** What the robot perceives: each object's pose, size, bounding box and on/in relations; text or JSON. */
import { round, roundVec, rotate, toLocal2d, type Quat, type Vec3 } from "./geometry.js";
import { extents, openBoxInterior } from "./objects.js";
import type { PhysicsScene } from "./physics.js";
import type { GripperState, ObjectObservation, Observation } from "./schemas.js";

const UPRIGHT_COS = Math.cos((20 * Math.PI) / 180);
/** How close a bottom must be to a surface to rest on it (m). */
const REST_GAP = 0.012;

export interface Bbox {
  min: Vec3;
  max: Vec3;
}

export function bboxOf(points: Vec3[]): Bbox {
  const min: Vec3 = [Infinity, Infinity, Infinity];
  const max: Vec3 = [-Infinity, -Infinity, -Infinity];
  for (const p of points) {
    for (let i = 0; i < 3; i++) {
      min[i] = Math.min(min[i]!, p[i]!);
      max[i] = Math.max(max[i]!, p[i]!);
    }
  }
  return { min, max };
}

/** Index of the local axis closest to vertical, and its signed alignment with world z. */
function upAxis(rot: Quat, cube: boolean): { axis: number; align: number } {
  if (!cube) return { axis: 2, align: rotate(rot, [0, 0, 1])[2] };
  let best = { axis: 2, align: 0 };
  const axes: Vec3[] = [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
  ];
  axes.forEach((a, i) => {
    const al = rotate(rot, a)[2];
    if (Math.abs(al) > Math.abs(best.align)) best = { axis: i, align: Math.abs(al) };
  });
  return best;
}

function yawOf(rot: Quat, kind: string, cube: boolean, sx: number, sy: number): number {
  if (kind === "cylinder") return 0;
  const { axis } = upAxis(rot, cube);
  const ref: Vec3 = axis === 0 ? [0, 1, 0] : [1, 0, 0];
  const h = rotate(rot, ref);
  const yaw = Math.atan2(h[1], h[0]);
  // A box looks the same turned by 180°, a cube by 90°: report the smallest equivalent heading.
  const period = cube || Math.abs(sx - sy) < 1e-6 ? Math.PI / 2 : Math.PI;
  let r = yaw % period;
  if (r > period / 2) r -= period;
  if (r <= -period / 2) r += period;
  return r;
}

export function isUpright(scene: PhysicsScene, name: string): boolean {
  const o = scene.get(name);
  const { rotation } = scene.pose(name);
  const { align } = upAxis(rotation, !!o.spec.cube);
  return o.spec.cube ? Math.abs(align) >= UPRIGHT_COS : align >= UPRIGHT_COS;
}

function inZone(point: Vec3, zonePos: Vec3, zoneYaw: number, size: [number, number], margin = 0): boolean {
  const [lx, ly] = toLocal2d(point, zonePos, zoneYaw);
  return Math.abs(lx) <= size[0] / 2 - margin && Math.abs(ly) <= size[1] / 2 - margin;
}

/** True when a point's x, y lie inside the open box's walls (less `margin`). */
export function insideOpenBox(scene: PhysicsScene, box: string, point: Vec3, margin = 0): boolean {
  const o = scene.get(box);
  if (o.spec.shape.kind !== "open_box") return false;
  const { hx, hy } = openBoxInterior(o.spec.shape);
  const pose = scene.pose(box);
  return inZone(point, pose.position, o.spec.yaw, [2 * hx, 2 * hy], margin);
}

/** True when an object's centre lies within a zone's rectangle (less `margin`). */
export function insideZone(scene: PhysicsScene, zone: string, point: Vec3, margin = 0): boolean {
  const z = scene.get(zone).spec;
  if (z.shape.kind !== "zone") return false;
  return inZone(point, z.position, z.yaw, z.shape.size, margin);
}

/** What an object rests on, from geometry alone. */
function support(scene: PhysicsScene, name: string, box: Bbox, boxes: Map<string, Bbox>): string | null {
  const bottom = box.min[2];
  if (bottom < PHYSICS_FLOOR_LIMIT) return "floor";
  const centre = scene.pose(name).position;
  let best: { name: string; gap: number } | null = null;
  for (const [other, ob] of boxes) {
    if (other === name) continue;
    const spec = scene.get(other).spec;
    if (spec.shape.kind === "zone") continue;
    let top = ob.max[2];
    const inside = spec.shape.kind === "open_box" && insideOpenBox(scene, other, centre);
    if (inside) top = ob.min[2] + (spec.shape.kind === "open_box" ? spec.shape.wall : 0);
    else if (
      centre[0] < ob.min[0] - 0.01 ||
      centre[0] > ob.max[0] + 0.01 ||
      centre[1] < ob.min[1] - 0.01 ||
      centre[1] > ob.max[1] + 0.01
    )
      continue;
    const gap = Math.abs(bottom - top);
    if (gap < REST_GAP && (!best || gap < best.gap)) best = { name: other, gap };
  }
  if (best) return best.name;
  if (bottom < 0.006) return "table";
  // Leaning on something: the nearest lower object whose box touches ours.
  for (const [other, ob] of boxes) {
    if (other === name || scene.get(other).spec.shape.kind === "zone") continue;
    const touching =
      ob.min[0] <= box.max[0] + 0.005 &&
      ob.max[0] >= box.min[0] - 0.005 &&
      ob.min[1] <= box.max[1] + 0.005 &&
      ob.max[1] >= box.min[1] - 0.005 &&
      ob.max[2] >= box.min[2] - 0.005 &&
      ob.min[2] < box.min[2];
    if (touching) return other;
  }
  return null;
}

const PHYSICS_FLOOR_LIMIT = -0.3;

export interface SceneFacts {
  boxes: Map<string, Bbox>;
  on: Map<string, string | null>;
  in: Map<string, string | null>;
  upright: Map<string, boolean>;
}

/** Boxes and relations of every object, computed once per observation. */
export function sceneFacts(scene: PhysicsScene, holding: string | null): SceneFacts {
  const boxes = new Map<string, Bbox>();
  for (const name of scene.objects.keys()) boxes.set(name, bboxOf(scene.hullPoints(name)));
  const on = new Map<string, string | null>();
  const inside = new Map<string, string | null>();
  const upright = new Map<string, boolean>();
  for (const [name, o] of scene.objects) {
    upright.set(name, isUpright(scene, name));
    if (o.spec.fixed) {
      on.set(name, o.spec.shape.kind === "zone" ? null : "table");
      inside.set(name, null);
      continue;
    }
    const rel = name === holding ? null : support(scene, name, boxes.get(name)!, boxes);
    on.set(name, rel);
    let container: string | null = null;
    if (name !== holding) {
      const centre = scene.pose(name).position;
      const box = boxes.get(name)!;
      for (const [other, ob] of boxes) {
        const kind = scene.get(other).spec.shape.kind;
        if (kind === "open_box" && insideOpenBox(scene, other, centre) && box.min[2] < ob.max[2])
          container = other;
        if (kind === "zone" && rel === "table" && insideZone(scene, other, centre)) container = other;
      }
    }
    inside.set(name, container);
  }
  return { boxes, on, in: inside, upright };
}

export function objectObservation(scene: PhysicsScene, name: string, facts: SceneFacts): ObjectObservation {
  const o = scene.get(name);
  const { position, rotation } = scene.pose(name);
  const size = extents(o.spec.shape);
  const box = facts.boxes.get(name)!;
  return {
    name,
    type: o.spec.type,
    colour: o.spec.colour,
    position: roundVec(position),
    yaw: round(
      o.spec.fixed ? o.spec.yaw : yawOf(rotation, o.spec.shape.kind, !!o.spec.cube, size[0], size[1]),
      3,
    ),
    size: roundVec(size),
    bbox: { min: roundVec(box.min), max: roundVec(box.max) },
    upright: facts.upright.get(name) ?? true,
    on: facts.on.get(name) ?? null,
    in: facts.in.get(name) ?? null,
    graspable: !o.spec.fixed,
    fixed: o.spec.fixed,
  };
}

export function observationText(obs: Observation): string {
  const g = obs.gripper;
  const f = (v: number) => v.toFixed(3);
  const lines = [
    `task: ${obs.task} — "${obs.instruction}"`,
    `gripper: at (${g.position.map(f).join(", ")}) yaw ${g.yaw.toFixed(2)} rad, ` +
      `${g.closed ? "closed" : "open"} ${f(g.opening)} m, holding ${g.holding ?? "nothing"}`,
    `objects (centre x, y, z in m; size x×y×z; yaw in rad):`,
  ];
  for (const o of obs.objects) {
    const rel = [o.on ? `on ${o.on}` : o.fixed ? "" : "not resting", o.in ? `in ${o.in}` : ""]
      .filter(Boolean)
      .join(", ");
    lines.push(
      `- ${o.name} (${o.colour} ${o.type}${o.fixed ? ", fixed" : ""}): centre (${o.position.map(f).join(", ")}), ` +
        `size ${o.size.map(f).join("×")}, yaw ${o.yaw.toFixed(2)}, top z ${f(o.bbox.max[2])}` +
        `${o.fixed ? "" : o.upright ? ", upright" : ", TOPPLED"}${rel ? `, ${rel}` : ""}`,
    );
  }
  lines.push(`actions so far: ${obs.actions}`);
  return lines.join("\n");
}

export function gripperText(g: GripperState): string {
  return `gripper at (${g.position.map((v) => v.toFixed(3)).join(", ")}), holding ${g.holding ?? "nothing"}`;
}
