/**
 * The top-down parallel gripper: its geometry, where its fingers are for a pose, and what lies between them.
 * The pose is the tool centre point (TCP) between the finger pads, plus a yaw; the fingers close along the
 * gripper's local x axis.
 */
import { quatFromYaw, rotate, add, toLocal2d, type Vec3 } from "./geometry.js";
import type { PhysicsScene, QueryBox } from "./physics.js";

export const GRIPPER = {
  maxOpening: 0.08,
  /** Finger size: thickness along the closing axis, width along local y, length (vertical). */
  fingerThick: 0.01,
  fingerWidth: 0.02,
  fingerLen: 0.05,
  /** The fingertips are this far below the TCP. */
  tip: 0.008,
  /** The palm the fingers slide in: always as wide as the fully open fingers. */
  palmDepth: 0.03,
  palmHeight: 0.03,
  home: [0, -0.25, 0.3] as Vec3,
  /** Top speed of the TCP (m/s) and of yaw (rad/s); with the timestep they set the motion increment. */
  speed: 0.5,
  turnRate: 3,
} as const;

/** Where the TCP may go; outside it a motion is UNREACHABLE. Below z = 0 the table stops it first. */
export const WORKSPACE = { x: [-0.45, 0.45], y: [-0.35, 0.35], z: [-0.05, 0.6] } as const;

export interface GripperPose {
  position: Vec3;
  yaw: number;
}

export function inWorkspace(p: Vec3): boolean {
  return (
    p[0] >= WORKSPACE.x[0] &&
    p[0] <= WORKSPACE.x[1] &&
    p[1] >= WORKSPACE.y[0] &&
    p[1] <= WORKSPACE.y[1] &&
    p[2] >= WORKSPACE.z[0] &&
    p[2] <= WORKSPACE.z[1]
  );
}

/** The two fingers and the palm as boxes, shrunk by `shrink` so touching is not overlapping. */
export function gripperBoxes(pose: GripperPose, opening: number, shrink = 0.001): QueryBox[] {
  const rot = quatFromYaw(pose.yaw);
  const g = GRIPPER;
  const fingerZ = -g.tip + g.fingerLen / 2;
  const fx = opening / 2 + g.fingerThick / 2;
  const finger = (side: number): QueryBox => ({
    size: [g.fingerThick - 2 * shrink, g.fingerWidth - 2 * shrink, g.fingerLen - 2 * shrink],
    position: add(pose.position, rotate(rot, [side * fx, 0, fingerZ])),
    rotation: rot,
  });
  const palmWidth = g.maxOpening + 2 * g.fingerThick;
  const palm: QueryBox = {
    size: [palmWidth - 2 * shrink, g.palmDepth - 2 * shrink, g.palmHeight - 2 * shrink],
    position: add(pose.position, rotate(rot, [0, 0, -g.tip + g.fingerLen + g.palmHeight / 2])),
    rotation: rot,
  };
  return [finger(-1), finger(1), palm];
}

/** The lowest point of the fingers. */
export function fingertipZ(pose: GripperPose): number {
  return pose.position[2] - GRIPPER.tip;
}

/** How an object sits relative to the open fingers. */
export interface Enclosure {
  name: string;
  /** Extent across the fingers (along the closing axis). */
  width: number;
  /** Horizontal distance of the object's centre from the TCP, and its height difference. */
  offCentre: number;
  dz: number;
  /** Fully between the fingers (graspable if not fixed) or spanning them (too wide). */
  kind: "between" | "too_wide";
  fixed: boolean;
}

/** Objects the closing fingers would meet, nearest to the TCP first. */
export function enclosures(
  scene: PhysicsScene,
  pose: GripperPose,
  opening: number,
  skip: ReadonlySet<string>,
): Enclosure[] {
  const g = GRIPPER;
  const tip = fingertipZ(pose);
  const padTop = tip + g.fingerLen;
  const out: Enclosure[] = [];
  for (const [name, o] of scene.objects) {
    if (!o.body || skip.has(name)) continue;
    const pts = scene.hullPoints(name);
    let a = Infinity;
    let b = -Infinity;
    let c = Infinity;
    let d = -Infinity;
    let zmin = Infinity;
    let zmax = -Infinity;
    for (const p of pts) {
      const [lx, ly] = toLocal2d(p, pose.position, pose.yaw);
      a = Math.min(a, lx);
      b = Math.max(b, lx);
      c = Math.min(c, ly);
      d = Math.max(d, ly);
      zmin = Math.min(zmin, p[2]);
      zmax = Math.max(zmax, p[2]);
    }
    const vertical = Math.min(zmax, padTop) - Math.max(zmin, tip);
    if (vertical < Math.min(0.008, 0.5 * (zmax - zmin))) continue;
    const lateral = Math.min(d, g.fingerWidth / 2) - Math.max(c, -g.fingerWidth / 2);
    if (lateral < 0.005) continue;
    const half = opening / 2 + 0.002;
    const centre = scene.pose(name).position;
    const [cx, cy] = toLocal2d(centre, pose.position, pose.yaw);
    const base = {
      name,
      width: b - a,
      offCentre: Math.hypot(cx, cy),
      dz: pose.position[2] - centre[2],
      fixed: o.spec.fixed,
    };
    if (a >= -half && b <= half) out.push({ ...base, kind: "between" });
    else if (a < -opening / 2 && b > opening / 2) out.push({ ...base, kind: "too_wide" });
  }
  return out.sort((p, q) => p.offCentre - q.offCentre || p.name.localeCompare(q.name));
}
