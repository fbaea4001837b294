/** A small RGBA raster with alpha-blended polygons, lines, discs and bitmap text, written out as PNG. */
import { PNG } from "pngjs";
import { ADVANCE, GLYPH_H, GLYPH_W, glyph } from "./font.js";

/** r, g, b in 0..255 and alpha in 0..1. */
export type Rgba = [number, number, number, number];
export type Pt = [number, number];

export class Canvas {
  readonly data: Uint8Array;

  constructor(
    readonly width: number,
    readonly height: number,
    background: Rgba = [255, 255, 255, 1],
  ) {
    this.data = new Uint8Array(width * height * 4);
    for (let i = 0; i < width * height; i++) {
      this.data[i * 4] = background[0];
      this.data[i * 4 + 1] = background[1];
      this.data[i * 4 + 2] = background[2];
      this.data[i * 4 + 3] = 255;
    }
  }

  blend(x: number, y: number, c: Rgba): void {
    if (x < 0 || y < 0 || x >= this.width || y >= this.height) return;
    const i = (y * this.width + x) * 4;
    const a = c[3];
    this.data[i] = Math.round(this.data[i]! * (1 - a) + c[0] * a);
    this.data[i + 1] = Math.round(this.data[i + 1]! * (1 - a) + c[1] * a);
    this.data[i + 2] = Math.round(this.data[i + 2]! * (1 - a) + c[2] * a);
  }

  fillRect(x0: number, y0: number, x1: number, y1: number, c: Rgba): void {
    const xa = Math.max(0, Math.round(Math.min(x0, x1)));
    const xb = Math.min(this.width, Math.round(Math.max(x0, x1)));
    const ya = Math.max(0, Math.round(Math.min(y0, y1)));
    const yb = Math.min(this.height, Math.round(Math.max(y0, y1)));
    for (let y = ya; y < yb; y++) for (let x = xa; x < xb; x++) this.blend(x, y, c);
  }

  /** Even-odd scanline fill, sampling pixel centres. */
  fillPolygon(pts: Pt[], c: Rgba): void {
    if (pts.length < 3) return;
    const ys = pts.map((p) => p[1]);
    const yMin = Math.max(0, Math.floor(Math.min(...ys)));
    const yMax = Math.min(this.height - 1, Math.ceil(Math.max(...ys)));
    for (let y = yMin; y <= yMax; y++) {
      const sy = y + 0.5;
      const xs: number[] = [];
      for (let i = 0; i < pts.length; i++) {
        const [ax, ay] = pts[i]!;
        const [bx, by] = pts[(i + 1) % pts.length]!;
        if (ay <= sy === by <= sy) continue;
        xs.push(ax + ((sy - ay) / (by - ay)) * (bx - ax));
      }
      xs.sort((a, b) => a - b);
      for (let k = 0; k + 1 < xs.length; k += 2) {
        const xa = Math.max(0, Math.ceil(xs[k]! - 0.5));
        const xb = Math.min(this.width - 1, Math.floor(xs[k + 1]! - 0.5));
        for (let x = xa; x <= xb; x++) this.blend(x, y, c);
      }
    }
  }

  /** A straight stroke of the given width (a filled quad). */
  line(a: Pt, b: Pt, width: number, c: Rgba): void {
    const dx = b[0] - a[0];
    const dy = b[1] - a[1];
    const len = Math.hypot(dx, dy);
    if (len < 1e-9) return;
    const nx = (-dy / len) * (width / 2);
    const ny = (dx / len) * (width / 2);
    this.fillPolygon(
      [
        [a[0] + nx, a[1] + ny],
        [b[0] + nx, b[1] + ny],
        [b[0] - nx, b[1] - ny],
        [a[0] - nx, a[1] - ny],
      ],
      c,
    );
  }

  /** A closed or open polyline; `dash` = [on, off] lengths in pixels. */
  polyline(pts: Pt[], width: number, c: Rgba, closed = false, dash?: [number, number]): void {
    const n = closed ? pts.length : pts.length - 1;
    for (let i = 0; i < n; i++) {
      const a = pts[i]!;
      const b = pts[(i + 1) % pts.length]!;
      if (!dash) {
        this.line(a, b, width, c);
        continue;
      }
      const len = Math.hypot(b[0] - a[0], b[1] - a[1]);
      for (let s = 0; s < len; s += dash[0] + dash[1]) {
        const e = Math.min(len, s + dash[0]);
        const p = (t: number): Pt => [a[0] + ((b[0] - a[0]) * t) / len, a[1] + ((b[1] - a[1]) * t) / len];
        this.line(p(s), p(e), width, c);
      }
    }
  }

  disc(cx: number, cy: number, r: number, c: Rgba): void {
    const n = Math.max(12, Math.ceil(r * 2));
    const pts: Pt[] = [];
    for (let i = 0; i < n; i++)
      pts.push([cx + r * Math.cos((2 * Math.PI * i) / n), cy + r * Math.sin((2 * Math.PI * i) / n)]);
    this.fillPolygon(pts, c);
  }

  textWidth(s: string, scale: number): number {
    return [...s].length * ADVANCE * scale - scale;
  }

  textHeight(scale: number): number {
    return GLYPH_H * scale;
  }

  /** Text with its top-left corner at (x, y). */
  text(x: number, y: number, s: string, c: Rgba, scale: number): void {
    let cx = Math.round(x);
    const top = Math.round(y);
    for (const ch of s) {
      const cells = glyph(ch);
      for (let r = 0; r < GLYPH_H; r++) {
        for (let col = 0; col < GLYPH_W; col++) {
          if (!cells[r * GLYPH_W + col]) continue;
          for (let dy = 0; dy < scale; dy++)
            for (let dx = 0; dx < scale; dx++) this.blend(cx + col * scale + dx, top + r * scale + dy, c);
        }
      }
      cx += ADVANCE * scale;
    }
  }

  /** Average k×k blocks: drawing at k× and shrinking gives smooth edges. */
  downsample(k: number): Canvas {
    const w = Math.floor(this.width / k);
    const h = Math.floor(this.height / k);
    const out = new Canvas(w, h);
    const n = k * k;
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        let r = 0;
        let g = 0;
        let b = 0;
        for (let dy = 0; dy < k; dy++) {
          for (let dx = 0; dx < k; dx++) {
            const i = ((y * k + dy) * this.width + x * k + dx) * 4;
            r += this.data[i]!;
            g += this.data[i + 1]!;
            b += this.data[i + 2]!;
          }
        }
        const o = (y * w + x) * 4;
        out.data[o] = Math.round(r / n);
        out.data[o + 1] = Math.round(g / n);
        out.data[o + 2] = Math.round(b / n);
        out.data[o + 3] = 255;
      }
    }
    return out;
  }

  png(): Buffer {
    const png = new PNG({ width: this.width, height: this.height });
    png.data = Buffer.from(this.data.buffer, this.data.byteOffset, this.data.byteLength);
    return PNG.sync.write(png);
  }
}
