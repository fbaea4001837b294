/**
 * Pictures of an episode: a top-down map (grid, scale, objects in colour with names and heights, containers
 * and target zones, the gripper and its recent path) or a front view (x across, z up) that shows heights.
 * Drawn at twice the size and shrunk, so edges are smooth and the bitmap text stays crisp.
 */
import { add, convexHull, rotate, type Vec3 } from "../geometry.js";
import type { Episode } from "../episode.js";
import { GRIPPER, WORKSPACE, gripperBoxes } from "../gripper.js";
import { bboxOf } from "../observation.js";
import { PALETTE, openBoxParts, localHullPoints } from "../objects.js";
import { PHYSICS } from "../physics.js";
import { Canvas, type Pt, type Rgba } from "./canvas.js";

export type View = "top" | "front";
export const VIEWS: readonly View[] = ["top", "front"];

const SS = 2;
const INK: Rgba = [34, 38, 46, 1];
const TABLE: Rgba = [226, 210, 178, 1];

interface Solid {
  name: string;
  /** World points of each convex part (open boxes have several). */
  parts: { pts: Vec3[]; role: "floor" | "wall" | "solid" }[];
  colour: Rgba;
  top: number;
  bottom: number;
  centre: Vec3;
  upright: boolean;
  fixed: boolean;
  zone: boolean;
}

function solids(ep: Episode): Solid[] {
  const facts = ep.facts();
  const out: Solid[] = [];
  for (const [name, o] of ep.scene.objects) {
    const pose = ep.scene.pose(name);
    const shape = o.spec.shape;
    const world = (pts: Vec3[], offset: Vec3 = [0, 0, 0]) =>
      pts.map((p) => add(pose.position, rotate(pose.rotation, add(p, offset))));
    let parts: Solid["parts"];
    if (shape.kind === "open_box") {
      parts = openBoxParts(shape).map((part, i) => ({
        pts: world(localHullPoints({ kind: "box", size: part.size }), part.offset),
        role: i === 0 ? "floor" : "wall",
      }));
    } else {
      parts = [{ pts: world(localHullPoints(shape)), role: "solid" }];
    }
    const box = bboxOf(parts.flatMap((p) => p.pts));
    const [r, g, b] = PALETTE[o.spec.colour];
    out.push({
      name,
      parts,
      colour: [r, g, b, 1],
      top: box.max[2],
      bottom: box.min[2],
      centre: pose.position,
      upright: facts.upright.get(name) ?? true,
      fixed: o.spec.fixed,
      zone: shape.kind === "zone",
    });
  }
  return out;
}

function shade(c: Rgba, k: number, alpha = c[3]): Rgba {
  if (k >= 0) return [c[0] + (255 - c[0]) * k, c[1] + (255 - c[1]) * k, c[2] + (255 - c[2]) * k, alpha];
  return [c[0] * (1 + k), c[1] * (1 + k), c[2] * (1 + k), alpha];
}

/** Text scale (final pixels per font cell) for an image width. */
function textScale(size: number): number {
  return Math.max(1, Math.floor(size / 600));
}

interface Frame {
  canvas: Canvas;
  /** World (m) to internal pixels. */
  map: (a: number, b: number) => Pt;
  px: number;
  ts: number;
}

type Rect = [number, number, number, number];

function overlap(a: Rect, b: Rect): boolean {
  return !(a[0] + a[2] <= b[0] || b[0] + b[2] <= a[0] || a[1] + a[3] <= b[1] || b[1] + b[3] <= a[1]);
}

function rectOf(pts: Pt[]): Rect {
  const xs = pts.map((p) => p[0]);
  const ys = pts.map((p) => p[1]);
  const x = Math.min(...xs);
  const y = Math.min(...ys);
  return [x, y, Math.max(...xs) - x, Math.max(...ys) - y];
}

/**
 * Label placement: try spots on rings around the anchor, nearest first, that cover no other label and no
 * object (then: no free object; then: no label). A label placed away from its object gets a leader line.
 */
class Labels {
  private readonly taken: Rect[] = [];
  /** Object rectangles; `soft` ones (scenery) may be covered when nothing else fits. */
  private readonly obstacles: { rect: Rect; soft: boolean; owner: string }[] = [];
  constructor(private readonly f: Frame) {}

  obstacle(owner: string, rect: Rect, soft: boolean): void {
    this.obstacles.push({ rect, soft, owner });
  }

  reserve(rect: Rect): void {
    this.taken.push(rect);
  }

  place(text: string, owner: string, anchor: Pt, radius: number, colour: Rgba = INK): void {
    const c = this.f.canvas;
    const ts = this.f.ts;
    const w = c.textWidth(text, ts) + 4 * ts;
    const h = c.textHeight(ts) + 2 * ts;
    const spots: Rect[] = [];
    for (let ring = 0; ring < 7; ring++) {
      const r = radius + 2 * ts + ring * 7 * ts;
      for (let k = 0; k < 16; k++) {
        const a = (k * Math.PI) / 8;
        const ca = Math.cos(a);
        const sa = Math.sin(a);
        const x = anchor[0] + ca * r + (ca > 0.3 ? 0 : ca < -0.3 ? -w : -w / 2);
        const y = anchor[1] + sa * r + (sa > 0.3 ? 0 : sa < -0.3 ? -h : -h / 2);
        spots.push([x, y, w, h]);
      }
    }
    const inside = (q: Rect) => q[0] >= 0 && q[1] >= 0 && q[0] + q[2] <= c.width && q[1] + q[3] <= c.height;
    const free = (q: Rect, level: number) =>
      inside(q) &&
      this.taken.every((t) => !overlap(q, t)) &&
      this.obstacles.every(
        (o) => o.owner === owner || (level >= 1 && o.soft) || level >= 2 || !overlap(q, o.rect),
      );
    const spot = [0, 1, 2].map((level) => spots.find((q) => free(q, level))).find((q) => q) ?? spots[0]!;
    this.taken.push(spot);
    const mid: Pt = [spot[0] + w / 2, spot[1] + h / 2];
    if (Math.hypot(mid[0] - anchor[0], mid[1] - anchor[1]) > radius + w / 2 + 4 * ts) {
      const end: Pt = [
        Math.max(spot[0], Math.min(anchor[0], spot[0] + w)),
        Math.max(spot[1], Math.min(anchor[1], spot[1] + h)),
      ];
      c.line(anchor, end, ts * 0.6, [60, 60, 60, 0.55]);
    }
    c.fillRect(spot[0], spot[1], spot[0] + w, spot[1] + h, [255, 255, 255, 0.8]);
    c.text(spot[0] + 2 * ts, spot[1] + ts, text, colour, ts);
  }
}

function header(f: Frame, ep: Episode, height: number): void {
  const c = f.canvas;
  const ts = f.ts;
  const g = ep.gripperState();
  c.fillRect(0, 0, c.width, height, [245, 246, 248, 1]);
  const line1 = `${ep.task.name}  seed ${ep.seed}  variation ${ep.variation}: "${ep.instance.instruction}"`;
  const line2 =
    `gripper (${g.position.map((v) => v.toFixed(2)).join(", ")}) yaw ${g.yaw.toFixed(2)}  ` +
    `${g.closed ? "closed" : "open"} ${g.opening.toFixed(3)} m  holding: ${g.holding ?? "nothing"}  actions: ${ep.actions}`;
  c.text(4 * ts, 3 * ts, line1, INK, ts);
  c.text(4 * ts, 14 * ts, line2, [70, 75, 85, 1], ts);
}

/** Axis legend on the left and a 10 cm scale bar on the right, under the plot. */
function footer(f: Frame, origin: Pt, legend: string): void {
  const { canvas, px, ts } = f;
  const y = origin[1] + 13 * ts;
  canvas.text(origin[0], y, legend, [70, 75, 85, 1], ts);
  const right = f.map(PHYSICS.table.hx, 0)[0];
  canvas.fillRect(right - 0.1 * px, y + 2 * ts, right, y + 5 * ts, INK);
  canvas.text(right - 0.1 * px - canvas.textWidth("0.1 m", ts) - 3 * ts, y, "0.1 m", INK, ts);
}

/** Where the top view puts things: image height and the world-to-pixel map, at `scale` pixels per pixel. */
export function topLayout(
  size: number,
  scale = 1,
): { width: number; height: number; map: (x: number, y: number) => Pt } {
  const ts = textScale(size) * scale;
  const left = 36 * ts;
  const right = 8 * ts;
  const top = 26 * ts;
  const bottom = 24 * ts;
  const W = size * scale;
  const px = (W - left - right) / (2 * PHYSICS.table.hx);
  return {
    width: W,
    height: Math.round(top + 2 * PHYSICS.table.hy * px + bottom),
    map: (x, y) => [left + (x + PHYSICS.table.hx) * px, top + (PHYSICS.table.hy - y) * px],
  };
}

function drawTop(ep: Episode, size: number): Canvas {
  const ts = textScale(size) * SS;
  const top = 26 * ts;
  const W = size * SS;
  const layout = topLayout(size, SS);
  const px = layout.map(1, 0)[0] - layout.map(0, 0)[0];
  const H = layout.height;
  const canvas = new Canvas(W, H, [252, 252, 252, 1]);
  const map = layout.map;
  const f: Frame = { canvas, map, px, ts };
  const [tx0, ty0] = map(-PHYSICS.table.hx, PHYSICS.table.hy);
  const [tx1, ty1] = map(PHYSICS.table.hx, -PHYSICS.table.hy);
  canvas.fillRect(tx0, ty0, tx1, ty1, TABLE);
  // Grid: every 5 cm, stronger every 10 cm, with tick labels in metres.
  for (let i = -10; i <= 10; i++) {
    const x = i * 0.05;
    const strong = i % 2 === 0;
    canvas.line(map(x, -PHYSICS.table.hy), map(x, PHYSICS.table.hy), strong ? ts * 0.9 : ts * 0.5, [
      120,
      100,
      70,
      strong ? 0.35 : 0.18,
    ]);
    if (strong && Math.abs(x) < 0.49) {
      const label = x.toFixed(1);
      const [lx, ly] = map(x, -PHYSICS.table.hy);
      canvas.text(lx - canvas.textWidth(label, ts) / 2, ly + 3 * ts, label, INK, ts);
    }
  }
  for (let j = -8; j <= 8; j++) {
    const y = j * 0.05;
    const strong = j % 2 === 0;
    canvas.line(map(-PHYSICS.table.hx, y), map(PHYSICS.table.hx, y), strong ? ts * 0.9 : ts * 0.5, [
      120,
      100,
      70,
      strong ? 0.35 : 0.18,
    ]);
    if (strong && Math.abs(y) < 0.39) {
      const label = y.toFixed(1);
      const [lx, ly] = map(-PHYSICS.table.hx, y);
      canvas.text(lx - canvas.textWidth(label, ts) - 3 * ts, ly - 4 * ts, label, INK, ts);
    }
  }
  canvas.polyline(
    [
      map(WORKSPACE.x[0], WORKSPACE.y[0]),
      map(WORKSPACE.x[1], WORKSPACE.y[0]),
      map(WORKSPACE.x[1], WORKSPACE.y[1]),
      map(WORKSPACE.x[0], WORKSPACE.y[1]),
    ],
    ts * 0.8,
    [90, 90, 90, 0.5],
    true,
    [6 * ts, 4 * ts],
  );
  const labels = new Labels(f);
  header(f, ep, top - 4 * ts);
  labels.reserve([0, 0, W, top - 4 * ts]);
  footer(f, map(-PHYSICS.table.hx, -PHYSICS.table.hy), "x (m) →  y (m) ↑  labels: name z=top height (m)");

  const all = solids(ep);
  const toPts = (pts: Vec3[]) => convexHull(pts.map((p) => map(p[0], p[1])));
  for (const z of all.filter((s) => s.zone)) {
    const hull = toPts(z.parts[0]!.pts);
    canvas.fillPolygon(hull, shade(z.colour, 0.35, 0.45));
    canvas.polyline(hull, ts * 1.2, shade(z.colour, -0.2, 0.9), true, [5 * ts, 3 * ts]);
  }
  // Scenery first, then free objects from the bottom up, so what is on or in something covers it.
  const bodies = all
    .filter((s) => !s.zone)
    .sort(
      (a, b) =>
        Number(b.fixed) - Number(a.fixed) ||
        a.bottom - b.bottom ||
        a.top - b.top ||
        a.name.localeCompare(b.name),
    );
  for (const s of bodies) {
    for (const part of s.parts) {
      const hull = toPts(part.pts);
      // Free objects get lighter the higher they sit, so the layers of a stack read from above.
      const fill =
        part.role === "floor"
          ? shade(s.colour, 0.55)
          : s.fixed
            ? shade(s.colour, 0.1)
            : shade(s.colour, Math.min(0.35, Math.max(0, s.bottom) * 2.5));
      canvas.fillPolygon(hull, fill);
      canvas.polyline(hull, ts * 0.8, shade(s.colour, -0.45), true);
    }
    if (!s.upright && !s.fixed)
      canvas.polyline(toPts(s.parts[0]!.pts), ts * 1.2, [220, 30, 30, 1], true, [3 * ts, 2 * ts]);
  }
  // Recent gripper path, then the gripper itself on top.
  const path = ep.path.map((p) => map(p[0], p[1]));
  if (path.length > 1) {
    canvas.polyline(path, ts * 0.8, [30, 90, 200, 0.45], false, [4 * ts, 3 * ts]);
    canvas.disc(path[0]![0], path[0]![1], 2 * ts, [30, 90, 200, 0.7]);
  }
  const boxes = gripperBoxes(ep.pose, ep.opening, 0);
  const boxHull = (b: (typeof boxes)[number]) =>
    toPts(localHullPoints({ kind: "box", size: b.size }).map((p) => add(b.position, rotate(b.rotation, p))));
  canvas.polyline(boxHull(boxes[2]!), ts * 0.8, [40, 40, 40, 0.55], true);
  canvas.fillPolygon(boxHull(boxes[2]!), [60, 60, 60, 0.12]);
  for (const b of boxes.slice(0, 2)) canvas.fillPolygon(boxHull(b), [45, 45, 50, 0.9]);
  const tcp = map(ep.pose.position[0], ep.pose.position[1]);
  canvas.line([tcp[0] - 5 * ts, tcp[1]], [tcp[0] + 5 * ts, tcp[1]], ts * 0.8, [200, 20, 20, 1]);
  canvas.line([tcp[0], tcp[1] - 5 * ts], [tcp[0], tcp[1] + 5 * ts], ts * 0.8, [200, 20, 20, 1]);
  // Labels last: they avoid each other and the objects; small free objects first, scenery last.
  const reach = (GRIPPER.maxOpening / 2 + GRIPPER.fingerThick) * px;
  labels.obstacle("gripper", [tcp[0] - reach, tcp[1] - reach, 2 * reach, 2 * reach], false);
  const hulls = new Map(all.map((s) => [s.name, toPts(s.parts.flatMap((p) => p.pts))]));
  for (const s of all) labels.obstacle(s.name, rectOf(hulls.get(s.name)!), s.fixed);
  const order = [...all].sort(
    (a, b) => Number(a.fixed) - Number(b.fixed) || b.top - a.top || a.name.localeCompare(b.name),
  );
  for (const s of order) {
    const [cx, cy] = map(s.centre[0], s.centre[1]);
    const r = Math.max(...hulls.get(s.name)!.map((p) => Math.hypot(p[0] - cx, p[1] - cy)));
    const text = s.zone
      ? s.name
      : `${s.name} z=${s.top.toFixed(3)}${!s.upright && !s.fixed ? " TOPPLED" : ""}`;
    labels.place(text, s.name, [cx, cy], r, s.zone ? shade(s.colour, -0.5, 1) : INK);
  }
  labels.place(`gripper z=${ep.pose.position[2].toFixed(3)}`, "gripper", tcp, reach, [200, 20, 20, 1]);
  return canvas;
}

function drawFront(ep: Episode, size: number): Canvas {
  const ts = textScale(size) * SS;
  const left = 36 * ts;
  const right = 8 * ts;
  const top = 26 * ts;
  const bottom = 24 * ts;
  const W = size * SS;
  const px = (W - left - right) / (2 * PHYSICS.table.hx);
  const all = solids(ep).filter((s) => !s.zone);
  const palmTop = ep.pose.position[2] - GRIPPER.tip + GRIPPER.fingerLen + GRIPPER.palmHeight;
  // Tall enough for the tallest thing and the gripper's palm, in 5 cm steps.
  const zMax = Math.min(
    0.7,
    Math.max(0.2, Math.ceil((Math.max(palmTop, ...all.map((s) => s.top)) + 0.03) / 0.05) * 0.05),
  );
  const zMin = -0.03;
  const headroom = 0.02;
  const H = Math.round(top + (zMax + headroom - zMin) * px + bottom);
  const canvas = new Canvas(W, H, [250, 251, 253, 1]);
  const map = (x: number, z: number): Pt => [
    left + (x + PHYSICS.table.hx) * px,
    top + (zMax + headroom - z) * px,
  ];
  const f: Frame = { canvas, map, px, ts };
  for (let k = 0; k * 0.05 <= zMax + 1e-9; k++) {
    const z = k * 0.05;
    const strong = k % 2 === 0;
    canvas.line(map(-PHYSICS.table.hx, z), map(PHYSICS.table.hx, z), ts * (strong ? 0.9 : 0.5), [
      110,
      120,
      140,
      strong ? 0.3 : 0.15,
    ]);
    if (strong) {
      const [lx, ly] = map(-PHYSICS.table.hx, z);
      canvas.text(lx - canvas.textWidth(z.toFixed(1), ts) - 3 * ts, ly - 4 * ts, z.toFixed(1), INK, ts);
    }
  }
  for (let i = -4; i <= 4; i++) {
    const label = (i * 0.1).toFixed(1);
    const [lx, ly] = map(i * 0.1, zMin);
    canvas.line([lx, ly - 2 * ts], [lx, ly], ts * 0.8, INK);
    canvas.text(lx - canvas.textWidth(label, ts) / 2, ly + 3 * ts, label, INK, ts);
  }
  const [t0x, t0y] = map(-PHYSICS.table.hx, 0);
  const [t1x, t1y] = map(PHYSICS.table.hx, zMin);
  canvas.fillRect(t0x, t0y, t1x, t1y, shade(TABLE, -0.15));
  const labels = new Labels(f);
  header(f, ep, top - 4 * ts);
  labels.reserve([0, 0, W, top - 4 * ts]);
  labels.reserve([0, t0y, W, H - t0y]);
  footer(f, [t0x, t1y], "front view from -y: x (m) →  z (m) ↑  near objects cover far ones");
  // Far (large y) first so near objects cover them, as a viewer at -y sees it.
  all.sort((a, b) => b.centre[1] - a.centre[1] || a.name.localeCompare(b.name));
  const hulls = new Map<string, Pt[]>();
  for (const s of all) {
    for (const part of s.parts) {
      const hull = convexHull(part.pts.map((p) => map(p[0], p[2])));
      canvas.fillPolygon(hull, part.role === "floor" ? shade(s.colour, 0.4) : s.colour);
      canvas.polyline(hull, ts * 0.8, shade(s.colour, -0.45), true);
    }
    hulls.set(s.name, convexHull(s.parts.flatMap((p) => p.pts).map((p) => map(p[0], p[2]))));
  }
  const boxes = gripperBoxes(ep.pose, ep.opening, 0);
  for (const b of boxes) {
    const pts = localHullPoints({ kind: "box", size: b.size }).map((p) =>
      add(b.position, rotate(b.rotation, p)),
    );
    canvas.fillPolygon(
      convexHull(pts.map((p) => map(p[0], p[2]))),
      b === boxes[2] ? [80, 80, 85, 0.6] : [45, 45, 50, 0.9],
    );
  }
  const arm: [Pt, Pt] = [map(ep.pose.position[0], palmTop), map(ep.pose.position[0], zMax)];
  canvas.line(arm[0], arm[1], 3 * ts, [80, 80, 85, 0.5]);
  labels.obstacle(
    "gripper",
    rectOf([
      arm[1],
      ...boxes.flatMap((b) => [
        map(b.position[0] - 0.06, b.position[2] - 0.03),
        map(b.position[0] + 0.06, b.position[2] + 0.03),
      ]),
    ]),
    false,
  );
  for (const s of all) labels.obstacle(s.name, rectOf(hulls.get(s.name)!), s.fixed);
  const order = [...all].sort(
    (a, b) => Number(a.fixed) - Number(b.fixed) || b.top - a.top || a.name.localeCompare(b.name),
  );
  for (const s of order) {
    const hull = hulls.get(s.name)!;
    const [cx, cy] = map(s.centre[0], s.centre[2]);
    const r = Math.max(...hull.map((p) => Math.hypot(p[0] - cx, p[1] - cy)));
    labels.place(`${s.name} z=${s.top.toFixed(3)}`, s.name, [cx, cy], r, INK);
  }
  return canvas;
}

/** A PNG of the episode's scene; `size` is the image width in pixels (128..2048). */
export function renderScene(ep: Episode, view: View, size: number): Buffer {
  const s = Math.max(128, Math.min(2048, Math.round(size)));
  const big = view === "front" ? drawFront(ep, s) : drawTop(ep, s);
  return big.downsample(SS).png();
}
