/** RLBench-style "put rubbish in bin": the crumpled paper goes in the bin; two tomatoes distract. */
import type { ObjectSpec } from "../objects.js";
import { FINGER_GAP, anyYaw, place, type Footprint } from "./layout.js";
import { insideBox, nothingGrasped } from "./checks.js";
import type { TaskDef } from "./types.js";

export const BIN = { size: [0.18, 0.18, 0.12] as [number, number, number], wall: 0.008 };
const RUBBISH: [number, number, number] = [0.036, 0.032, 0.03];
const TOMATO = { radius: 0.022, height: 0.04 };

export const rubbishInBin: TaskDef = {
  name: "rubbish_in_bin",
  description: "Put the rubbish (crumpled paper) in the bin; two tomatoes lie around.",
  variations: 1,
  describeVariation: () => "rubbish",
  build(rng) {
    const placed: Footprint[] = [];
    const b = place(rng, placed, BIN.size[0] / 2, BIN.size[1] / 2, 0.04);
    const objects: ObjectSpec[] = [
      {
        name: "bin",
        type: "bin",
        colour: "black",
        shape: { kind: "open_box", size: BIN.size, wall: BIN.wall },
        position: [b.x, b.y, BIN.size[2] / 2],
        yaw: 0,
        fixed: true,
      },
    ];
    const r = place(rng, placed, anyYaw(RUBBISH[0], RUBBISH[1]), anyYaw(RUBBISH[0], RUBBISH[1]), FINGER_GAP);
    objects.push({
      name: "rubbish",
      type: "rubbish",
      colour: "white",
      shape: { kind: "box", size: RUBBISH },
      position: [r.x, r.y, RUBBISH[2] / 2],
      yaw: rng.uniform(-Math.PI, Math.PI),
      fixed: false,
      density: 150,
    });
    for (const name of ["tomato_1", "tomato_2"]) {
      const t = place(rng, placed, TOMATO.radius, TOMATO.radius, FINGER_GAP);
      objects.push({
        name,
        type: "item",
        colour: "red",
        shape: { kind: "cylinder", radius: TOMATO.radius, height: TOMATO.height },
        position: [t.x, t.y, TOMATO.height / 2],
        yaw: 0,
        fixed: false,
      });
    }
    return { instruction: "put the rubbish in the bin", objects, goal: { rubbish: "rubbish", bin: "bin" } };
  },
  check(ctx) {
    return [insideBox(ctx, String(ctx.goal.rubbish), String(ctx.goal.bin)), nothingGrasped(ctx)];
  },
};
