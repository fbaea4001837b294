/**
 * Exact overlap tests between convex solids (separating-axis theorem), used for the gripper's collision
 * checks. Rapier's own shape queries report hits a few millimetres before contact near edges, which would
 * turn a clean top-down grasp into a COLLISION_OBJECT; these do not.
 */
import { add, dot, rotate, type Quat, type Vec3 } from "./geometry.js";

export interface Convex {
  verts: Vec3[];
  /** Face normals (directions only; sign does not matter). */
  normals: Vec3[];
  /** Edge directions. */
  edges: Vec3[];
  min: Vec3;
  max: Vec3;
}

function bounds(verts: Vec3[]): { min: Vec3; max: Vec3 } {
  const min: Vec3 = [Infinity, Infinity, Infinity];
  const max: Vec3 = [-Infinity, -Infinity, -Infinity];
  for (const v of verts) {
    for (let i = 0; i < 3; i++) {
      if (v[i]! < min[i]!) min[i] = v[i]!;
      if (v[i]! > max[i]!) max[i] = v[i]!;
    }
  }
  return { min, max };
}

export function boxConvex(size: Vec3, position: Vec3, rotation: Quat): Convex {
  const verts: Vec3[] = [];
  for (const x of [-size[0] / 2, size[0] / 2])
    for (const y of [-size[1] / 2, size[1] / 2])
      for (const z of [-size[2] / 2, size[2] / 2]) verts.push(add(position, rotate(rotation, [x, y, z])));
  const axes: Vec3[] = [
    rotate(rotation, [1, 0, 0]),
    rotate(rotation, [0, 1, 0]),
    rotate(rotation, [0, 0, 1]),
  ];
  return { verts, normals: axes, edges: axes, ...bounds(verts) };
}

/** A cylinder along its local z, as an n-sided prism inscribed in it. */
export function prismConvex(radius: number, height: number, position: Vec3, rotation: Quat, n = 16): Convex {
  const verts: Vec3[] = [];
  for (const z of [-height / 2, height / 2]) {
    for (let i = 0; i < n; i++) {
      const a = (2 * Math.PI * i) / n;
      verts.push(add(position, rotate(rotation, [radius * Math.cos(a), radius * Math.sin(a), z])));
    }
  }
  const axis = rotate(rotation, [0, 0, 1]);
  const normals: Vec3[] = [axis];
  const edges: Vec3[] = [axis];
  for (let i = 0; i < n; i++) {
    const mid = (2 * Math.PI * (i + 0.5)) / n;
    normals.push(rotate(rotation, [Math.cos(mid), Math.sin(mid), 0]));
    edges.push(rotate(rotation, [-Math.sin(mid), Math.cos(mid), 0]));
  }
  return { verts, normals, edges, ...bounds(verts) };
}

function cross(a: Vec3, b: Vec3): Vec3 {
  return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
}

function separated(a: Convex, b: Convex, axis: Vec3, tol: number): boolean {
  let amin = Infinity;
  let amax = -Infinity;
  let bmin = Infinity;
  let bmax = -Infinity;
  for (const v of a.verts) {
    const p = dot(v, axis);
    if (p < amin) amin = p;
    if (p > amax) amax = p;
  }
  for (const v of b.verts) {
    const p = dot(v, axis);
    if (p < bmin) bmin = p;
    if (p > bmax) bmax = p;
  }
  const len = Math.hypot(axis[0], axis[1], axis[2]);
  return amax - bmin < tol * len || bmax - amin < tol * len;
}

/** True when the solids overlap by more than `tol` metres along every axis (touching is not overlapping). */
export function intersects(a: Convex, b: Convex, tol = 1e-4): boolean {
  for (let i = 0; i < 3; i++) {
    if (a.max[i]! - b.min[i]! < tol || b.max[i]! - a.min[i]! < tol) return false;
  }
  for (const n of a.normals) if (separated(a, b, n, tol)) return false;
  for (const n of b.normals) if (separated(a, b, n, tol)) return false;
  for (const ea of a.edges) {
    for (const eb of b.edges) {
      const c = cross(ea, eb);
      if (Math.hypot(c[0], c[1], c[2]) < 1e-9) continue;
      if (separated(a, b, c, tol)) return false;
    }
  }
  return true;
}
