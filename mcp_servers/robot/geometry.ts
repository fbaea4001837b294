/** Vectors and quaternions in the table frame: metres, x right, y away from the viewer, z up. */
export type Vec3 = [number, number, number];
export interface Quat {
  x: number;
  y: number;
  z: number;
  w: number;
}

export const IDENTITY: Quat = { x: 0, y: 0, z: 0, w: 1 };

export function add(a: Vec3, b: Vec3): Vec3 {
  return [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
}
export function sub(a: Vec3, b: Vec3): Vec3 {
  return [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
}
export function scale(a: Vec3, k: number): Vec3 {
  return [a[0] * k, a[1] * k, a[2] * k];
}
export function dot(a: Vec3, b: Vec3): number {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
export function norm(a: Vec3): number {
  return Math.hypot(a[0], a[1], a[2]);
}
export function lerp(a: Vec3, b: Vec3, t: number): Vec3 {
  return [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t];
}
export function dist2d(a: readonly number[], b: readonly number[]): number {
  return Math.hypot((a[0] ?? 0) - (b[0] ?? 0), (a[1] ?? 0) - (b[1] ?? 0));
}

export function quatFromAxisAngle(axis: Vec3, angle: number): Quat {
  const n = norm(axis) || 1;
  const s = Math.sin(angle / 2) / n;
  return { x: axis[0] * s, y: axis[1] * s, z: axis[2] * s, w: Math.cos(angle / 2) };
}

/** A rotation about the vertical axis, counter-clockwise seen from above. */
export function quatFromYaw(yaw: number): Quat {
  return { x: 0, y: 0, z: Math.sin(yaw / 2), w: Math.cos(yaw / 2) };
}

export function quatMul(a: Quat, b: Quat): Quat {
  return {
    w: a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
    x: a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
    y: a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
    z: a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
  };
}

export function quatConj(q: Quat): Quat {
  return { x: -q.x, y: -q.y, z: -q.z, w: q.w };
}

export function rotate(q: Quat, v: Vec3): Vec3 {
  // v' = v + 2w(u×v) + 2u×(u×v), with u the vector part of q
  const ux = q.x;
  const uy = q.y;
  const uz = q.z;
  const tx = 2 * (uy * v[2] - uz * v[1]);
  const ty = 2 * (uz * v[0] - ux * v[2]);
  const tz = 2 * (ux * v[1] - uy * v[0]);
  return [
    v[0] + q.w * tx + (uy * tz - uz * ty),
    v[1] + q.w * ty + (uz * tx - ux * tz),
    v[2] + q.w * tz + (ux * ty - uy * tx),
  ];
}

/** Wrap an angle to (-π, π]. */
export function wrapAngle(a: number): number {
  let r = a % (2 * Math.PI);
  if (r <= -Math.PI) r += 2 * Math.PI;
  if (r > Math.PI) r -= 2 * Math.PI;
  return r;
}

/** 2-D point in a frame centred at `origin` and turned by `yaw`. */
export function toLocal2d(p: readonly number[], origin: readonly number[], yaw: number): [number, number] {
  const dx = (p[0] ?? 0) - (origin[0] ?? 0);
  const dy = (p[1] ?? 0) - (origin[1] ?? 0);
  const c = Math.cos(yaw);
  const s = Math.sin(yaw);
  return [c * dx + s * dy, -s * dx + c * dy];
}

export function round(v: number, digits = 3): number {
  const k = 10 ** digits;
  const r = Math.round(v * k) / k;
  return Object.is(r, -0) ? 0 : r;
}

export function roundVec(v: readonly number[], digits = 3): Vec3 {
  return [round(v[0] ?? 0, digits), round(v[1] ?? 0, digits), round(v[2] ?? 0, digits)];
}

/** Convex hull of 2-D points (monotone chain), counter-clockwise, without repeating the first point. */
export function convexHull(points: [number, number][]): [number, number][] {
  const pts = [...points].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  if (pts.length < 3) return pts;
  const cross = (o: [number, number], a: [number, number], b: [number, number]) =>
    (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
  const lower: [number, number][] = [];
  for (const p of pts) {
    while (lower.length >= 2 && cross(lower[lower.length - 2]!, lower[lower.length - 1]!, p) <= 0)
      lower.pop();
    lower.push(p);
  }
  const upper: [number, number][] = [];
  for (let i = pts.length - 1; i >= 0; i--) {
    const p = pts[i]!;
    while (upper.length >= 2 && cross(upper[upper.length - 2]!, upper[upper.length - 1]!, p) <= 0)
      upper.pop();
    upper.push(p);
  }
  lower.pop();
  upper.pop();
  return lower.concat(upper);
}
