/** Pictures: the PNG decodes, objects are drawn in their colours where they are, the font is complete. */
import { PNG } from "pngjs";
import { describe, expect, it } from "vitest";
import { PALETTE, RobotEnv, envApi, runExpert, type ColourName } from "../index.js";
import { topLayout } from "../render/scene.js";
import { GLYPH_H, GLYPH_W, glyph } from "../render/font.js";

function pixel(png: PNG, x: number, y: number): [number, number, number] {
  const i = (Math.round(y) * png.width + Math.round(x)) * 4;
  return [png.data[i]!, png.data[i + 1]!, png.data[i + 2]!];
}

const near = (a: readonly number[], b: readonly number[], tol: number) =>
  a.every((v, i) => Math.abs(v - b[i]!) <= tol);

describe("renderer", () => {
  it("draws each block in its colour at its place on the top view", async () => {
    const env = await RobotEnv.create();
    env.reset("put_block_in_target", 4);
    const png = PNG.sync.read(env.image("top", 600));
    const layout = topLayout(600);
    expect(png.width).toBe(600);
    expect(Math.abs(png.height - layout.height)).toBeLessThanOrEqual(1);
    for (const o of env.observe().objects.filter((x) => x.type === "block")) {
      const [x, y] = layout.map(o.position[0], o.position[1]);
      expect(near(pixel(png, x, y), PALETTE[o.colour as ColourName], 12), o.name).toBe(true);
    }
    // Far from everything: the table's wood colour.
    const [tx, ty] = layout.map(0.48, -0.38);
    expect(near(pixel(png, tx, ty), [226, 210, 178], 30)).toBe(true);
  });

  it("the front view shows a finished stack as a column of its colour", async () => {
    const env = await RobotEnv.create();
    const r = env.reset("stack_blocks", 2);
    await runExpert("expert", { ...envApi(env), finish: async () => undefined }, r.task, r.goal);
    const png = PNG.sync.read(env.image("front", 500));
    const base = env.detect("red_block_1").position[0];
    // Scan the column above the stack's x: red from the table up to about 4 blocks high.
    // The front view's x axis: 36 px margin left, 8 right, the table's 1 m across the rest.
    const column = Array.from({ length: png.height }, (_, y) =>
      pixel(png, 36 + (base + 0.5) * (500 - 44), y),
    );
    const reds = column.filter((c) => c[0] > 150 && c[1] < 110 && c[2] < 110).length;
    expect(reds).toBeGreaterThan(60);
  });

  it("has a glyph for every printable ASCII character, each 5×8", () => {
    for (let c = 32; c < 127; c++) {
      const ch = String.fromCharCode(c);
      const cells = glyph(ch);
      expect(cells, ch).toHaveLength(GLYPH_W * GLYPH_H);
      if (ch !== " ") expect(cells.some(Boolean), ch).toBe(true);
    }
    expect(glyph("A")).not.toEqual(glyph("B"));
    expect(glyph("×")).toEqual(glyph("x"));
  });
});
