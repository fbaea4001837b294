/** RLBench-style "put block": one coloured block must end up resting inside the target zone. */
import { BLOCK_COLOURS, type ObjectSpec } from "../objects.js";
import { FINGER_GAP, anyYaw, place, type Footprint } from "./layout.js";
import { centreInZone, nothingGrasped, restsOn, upright } from "./checks.js";
import type { TaskDef } from "./types.js";

const SIZE = 0.05;
const ZONE = 0.12;

export const putBlockInTarget: TaskDef = {
  name: "put_block_in_target",
  description: "Put the block of the named colour in the green target zone (two other blocks distract).",
  variations: BLOCK_COLOURS.length,
  describeVariation: (v) => `${BLOCK_COLOURS[v]} block`,
  build(rng, variation) {
    const colour = BLOCK_COLOURS[variation]!;
    const others = rng.shuffle(BLOCK_COLOURS.filter((c) => c !== colour)).slice(0, 2);
    const placed: Footprint[] = [];
    const zone = place(rng, placed, ZONE / 2, ZONE / 2, 0.03);
    const objects: ObjectSpec[] = [
      {
        name: "target_zone",
        type: "target_zone",
        colour: "green",
        shape: { kind: "zone", size: [ZONE, ZONE] },
        position: [zone.x, zone.y, 0],
        yaw: 0,
        fixed: true,
      },
    ];
    for (const c of [colour, ...others]) {
      const d = place(rng, placed, anyYaw(SIZE, SIZE), anyYaw(SIZE, SIZE), FINGER_GAP);
      objects.push({
        name: `${c}_block`,
        type: "block",
        colour: c,
        shape: { kind: "box", size: [SIZE, SIZE, SIZE] },
        position: [d.x, d.y, SIZE / 2],
        yaw: rng.uniform(-Math.PI / 4, Math.PI / 4),
        fixed: false,
        cube: true,
      });
    }
    return {
      instruction: `put the ${colour} block in the target zone`,
      objects,
      goal: { block: `${colour}_block`, zone: "target_zone" },
    };
  },
  check(ctx) {
    const block = String(ctx.goal.block);
    const zone = String(ctx.goal.zone);
    return [
      centreInZone(ctx, block, zone),
      restsOn(ctx, block, "table"),
      upright(ctx, block),
      nothingGrasped(ctx),
    ];
  },
};
