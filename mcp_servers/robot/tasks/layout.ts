/** Seeded placement of objects on the table without overlaps, leaving room for the gripper's fingers. */
import type { Rng } from "../rng.js";

/** Where task objects may be placed (footprints stay inside), within the gripper's workspace. */
export const REGION = { x: [-0.36, 0.36], y: [-0.24, 0.3] } as const;

/** The random layout painted itself into a corner; the caller starts over with a fresh stream. */
export class LayoutFull extends Error {}

/** An axis-aligned footprint: centre and half extents. */
export interface Footprint {
  x: number;
  y: number;
  hx: number;
  hy: number;
}

/**
 * Sample a centre for a footprint of half extents (hx, hy) that keeps `gap` from every footprint already
 * placed. Deterministic for a given stream; throws LayoutFull when earlier choices left no room.
 */
export function place(rng: Rng, placed: Footprint[], hx: number, hy: number, gap: number): Footprint {
  for (let attempt = 0; attempt < 1000; attempt++) {
    const x = rng.uniform(REGION.x[0] + hx, REGION.x[1] - hx);
    const y = rng.uniform(REGION.y[0] + hy, REGION.y[1] - hy);
    const clear = placed.every(
      (p) => Math.max(Math.abs(p.x - x) - p.hx - hx, Math.abs(p.y - y) - p.hy - hy) >= gap,
    );
    if (clear) {
      const f = { x, y, hx, hy };
      placed.push(f);
      return f;
    }
  }
  throw new LayoutFull(`layout: no room for a ${2 * hx}×${2 * hy} m footprint after 1000 tries`);
}

/** Half extent of the square that holds a w×d rectangle at any yaw. */
export function anyYaw(w: number, d: number): number {
  return Math.hypot(w, d) / 2;
}

/** Clearance between graspable things: the open fingers reach ~2.5 cm past an object's side. */
export const FINGER_GAP = 0.05;
