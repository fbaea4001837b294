/** RLBench-style "empty container": move every item from the large container into the bowl of the named colour. */
import type { ColourName, ObjectSpec } from "../objects.js";
import { place, type Footprint } from "./layout.js";
import { insideBox, nothingGrasped } from "./checks.js";
import type { TaskDef } from "./types.js";

const BOWL_COLOURS: ColourName[] = ["red", "blue", "yellow", "purple"];
const ITEM_COLOURS: ColourName[] = ["orange", "cyan", "white", "magenta", "lime"];
export const ITEM = 0.035;
export const CONTAINER = { size: [0.24, 0.24, 0.05] as [number, number, number], wall: 0.01 };
export const BOWL = { size: [0.17, 0.17, 0.045] as [number, number, number], wall: 0.01 };
const SLOTS: [number, number][] = [
  [-0.055, -0.055],
  [0.055, -0.055],
  [-0.055, 0.055],
  [0.055, 0.055],
];

export const emptyContainer: TaskDef = {
  name: "empty_container",
  description: "Move the three items out of the large grey container into the bowl of the named colour.",
  variations: BOWL_COLOURS.length,
  describeVariation: (v) => `${BOWL_COLOURS[v]} bowl`,
  build(rng, variation) {
    const colour = BOWL_COLOURS[variation]!;
    const other = rng.pick(BOWL_COLOURS.filter((c) => c !== colour));
    const placed: Footprint[] = [];
    const c = place(rng, placed, CONTAINER.size[0] / 2, CONTAINER.size[1] / 2, 0.03);
    const objects: ObjectSpec[] = [
      {
        name: "container",
        type: "container",
        colour: "grey",
        shape: { kind: "open_box", size: CONTAINER.size, wall: CONTAINER.wall },
        position: [c.x, c.y, CONTAINER.size[2] / 2],
        yaw: 0,
        fixed: true,
      },
    ];
    for (const bc of rng.shuffle([colour, other])) {
      const b = place(rng, placed, BOWL.size[0] / 2, BOWL.size[1] / 2, 0.03);
      objects.push({
        name: `${bc}_bowl`,
        type: "bowl",
        colour: bc,
        shape: { kind: "open_box", size: BOWL.size, wall: BOWL.wall },
        position: [b.x, b.y, BOWL.size[2] / 2],
        yaw: 0,
        fixed: true,
      });
    }
    const slots = rng.shuffle(SLOTS).slice(0, 3);
    const colours = rng.shuffle(ITEM_COLOURS).slice(0, 3);
    const items: string[] = [];
    slots.forEach(([sx, sy], i) => {
      const ic = colours[i]!;
      items.push(`${ic}_cube`);
      objects.push({
        name: `${ic}_cube`,
        type: "item",
        colour: ic,
        shape: { kind: "box", size: [ITEM, ITEM, ITEM] },
        position: [
          c.x + sx + rng.uniform(-0.008, 0.008),
          c.y + sy + rng.uniform(-0.008, 0.008),
          CONTAINER.wall + ITEM / 2,
        ],
        yaw: rng.uniform(-Math.PI / 4, Math.PI / 4),
        fixed: false,
        cube: true,
      });
    });
    return {
      instruction: `empty the container into the ${colour} bowl`,
      objects,
      goal: { container: "container", bowl: `${colour}_bowl`, items },
    };
  },
  check(ctx) {
    const bowl = String(ctx.goal.bowl);
    return [...(ctx.goal.items as string[]).map((item) => insideBox(ctx, item, bowl)), nothingGrasped(ctx)];
  },
};
