/** RLBench-style "meat off grill": take the named piece of meat off the grill and put it on the tray. */
import type { ObjectSpec } from "../objects.js";
import { place, type Footprint } from "./layout.js";
import { centreInZone, nothingGrasped, restsOn } from "./checks.js";
import type { TaskDef } from "./types.js";

export const GRILL: [number, number, number] = [0.26, 0.16, 0.05];
const MEATS = {
  chicken: { size: [0.06, 0.04, 0.035] as [number, number, number], colour: "tan" as const },
  steak: { size: [0.075, 0.045, 0.02] as [number, number, number], colour: "brown" as const },
};
const NAMES = ["chicken", "steak"] as const;
const TRAY = 0.14;

export const meatOffGrill: TaskDef = {
  name: "meat_off_grill",
  description: "Take the chicken or the steak off the grill and put it on the tray beside it.",
  variations: NAMES.length,
  describeVariation: (v) => NAMES[v]!,
  build(rng, variation) {
    const meat = NAMES[variation]!;
    const placed: Footprint[] = [];
    const g = place(rng, placed, GRILL[0] / 2, GRILL[1] / 2, 0.04);
    const t = place(rng, placed, TRAY / 2, TRAY / 2, 0.03);
    const objects: ObjectSpec[] = [
      {
        name: "grill",
        type: "grill",
        colour: "black",
        shape: { kind: "box", size: GRILL },
        position: [g.x, g.y, GRILL[2] / 2],
        yaw: 0,
        fixed: true,
      },
      {
        name: "tray",
        type: "target_zone",
        colour: "lime",
        shape: { kind: "zone", size: [TRAY, TRAY] },
        position: [t.x, t.y, 0],
        yaw: 0,
        fixed: true,
      },
    ];
    const order = rng.shuffle(NAMES);
    order.forEach((name, i) => {
      const m = MEATS[name];
      objects.push({
        name,
        type: "meat",
        colour: m.colour,
        shape: { kind: "box", size: m.size },
        position: [
          g.x + (i === 0 ? -0.065 : 0.065) + rng.uniform(-0.006, 0.006),
          g.y + rng.uniform(-0.02, 0.02),
          GRILL[2] + m.size[2] / 2,
        ],
        yaw: rng.uniform(-0.3, 0.3),
        fixed: false,
        density: 1000,
      });
    });
    return {
      instruction: `take the ${meat} off the grill and put it on the tray`,
      objects,
      goal: { meat, grill: "grill", tray: "tray" },
    };
  },
  check(ctx) {
    const meat = String(ctx.goal.meat);
    return [centreInZone(ctx, meat, String(ctx.goal.tray)), restsOn(ctx, meat, "table"), nothingGrasped(ctx)];
  },
};
