/** What a scene is made of: object specs, their shapes, and the colour palette. Pure data, no physics. */
import type { Vec3 } from "./geometry.js";

export type Shape =
  | { kind: "box"; size: Vec3 }
  | { kind: "cylinder"; radius: number; height: number }
  /** An open-top box (container, bowl, bin): a floor and four walls; `size` is the outside. */
  | { kind: "open_box"; size: Vec3; wall: number }
  /** A flat marked area on the table (target zone, tray). No collider: things rest on the table through it. */
  | { kind: "zone"; size: [number, number] };

export type ObjectType =
  | "block"
  | "item"
  | "jar"
  | "lid"
  | "container"
  | "bowl"
  | "bin"
  | "grill"
  | "meat"
  | "rubbish"
  | "target_zone";

export interface ObjectSpec {
  name: string;
  type: ObjectType;
  colour: ColourName;
  shape: Shape;
  /** Centre of the shape's bounding box when placed (zones: z = 0). */
  position: Vec3;
  yaw: number;
  /** Scenery that never moves (containers, bins, the grill, zones). */
  fixed: boolean;
  /** A cube: resting on any face counts as upright. */
  cube?: boolean;
  /** kg/m³; light wood by default. */
  density?: number;
}

export const PALETTE = {
  red: [214, 48, 49],
  green: [46, 160, 67],
  blue: [41, 98, 255],
  yellow: [240, 196, 25],
  orange: [243, 128, 32],
  purple: [142, 68, 173],
  cyan: [0, 184, 212],
  magenta: [216, 27, 150],
  white: [236, 236, 236],
  black: [40, 40, 40],
  grey: [128, 132, 138],
  brown: [141, 85, 46],
  pink: [246, 160, 170],
  lime: [150, 210, 40],
  tan: [210, 180, 140],
} as const satisfies Record<string, readonly [number, number, number]>;

export type ColourName = keyof typeof PALETTE;

/** Block colours used by the tasks (green is kept for target zones). */
export const BLOCK_COLOURS: ColourName[] = [
  "red",
  "blue",
  "yellow",
  "orange",
  "purple",
  "cyan",
  "magenta",
  "white",
];

/** Local-frame extents of a shape (x, y, z). */
export function extents(shape: Shape): Vec3 {
  switch (shape.kind) {
    case "box":
    case "open_box":
      return shape.size;
    case "cylinder":
      return [2 * shape.radius, 2 * shape.radius, shape.height];
    case "zone":
      return [shape.size[0], shape.size[1], 0];
  }
}

/** Points in the local frame whose convex hull is the shape (cylinders as 16-gons). */
export function localHullPoints(shape: Shape): Vec3[] {
  if (shape.kind === "cylinder") {
    const out: Vec3[] = [];
    const n = 16;
    for (const z of [-shape.height / 2, shape.height / 2]) {
      for (let i = 0; i < n; i++) {
        const a = (2 * Math.PI * i) / n;
        out.push([shape.radius * Math.cos(a), shape.radius * Math.sin(a), z]);
      }
    }
    return out;
  }
  const [sx, sy, sz] = extents(shape);
  const out: Vec3[] = [];
  for (const x of [-sx / 2, sx / 2])
    for (const y of [-sy / 2, sy / 2]) for (const z of [-sz / 2, sz / 2]) out.push([x, y, z]);
  return out;
}

/** An open box as solid parts: floor then walls (-x, +x, -y, +y), each a box with its local centre. */
export function openBoxParts(shape: Extract<Shape, { kind: "open_box" }>): { size: Vec3; offset: Vec3 }[] {
  const [sx, sy, sz] = shape.size;
  const w = shape.wall;
  return [
    { size: [sx, sy, w], offset: [0, 0, -sz / 2 + w / 2] },
    { size: [w, sy, sz], offset: [-sx / 2 + w / 2, 0, 0] },
    { size: [w, sy, sz], offset: [sx / 2 - w / 2, 0, 0] },
    { size: [sx - 2 * w, w, sz], offset: [0, -sy / 2 + w / 2, 0] },
    { size: [sx - 2 * w, w, sz], offset: [0, sy / 2 - w / 2, 0] },
  ];
}

/** Inner half-extents (x, y) and floor-top height above the bottom for an open box. */
export function openBoxInterior(shape: Extract<Shape, { kind: "open_box" }>): {
  hx: number;
  hy: number;
  floor: number;
} {
  return { hx: shape.size[0] / 2 - shape.wall, hy: shape.size[1] / 2 - shape.wall, floor: shape.wall };
}
