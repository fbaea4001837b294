/** RLBench-style "close jar": put the lid on the jar of the named colour (a second jar distracts). */
import { BLOCK_COLOURS, type ObjectSpec } from "../objects.js";
import { FINGER_GAP, place, type Footprint } from "./layout.js";
import { centredOn, nothingGrasped, restsOn, upright } from "./checks.js";
import type { TaskDef } from "./types.js";

export const JAR = { radius: 0.03, height: 0.09 };
export const LID = { radius: 0.034, height: 0.02 };
/** How far the lid's centre may be from the jar's axis and still close it. */
export const LID_TOLERANCE = 0.01;

export const closeJar: TaskDef = {
  name: "close_jar",
  description: "Put the lid on the jar of the named colour; the other jar stays open.",
  variations: BLOCK_COLOURS.length,
  describeVariation: (v) => `${BLOCK_COLOURS[v]} jar`,
  build(rng, variation) {
    const colour = BLOCK_COLOURS[variation]!;
    const other = rng.pick(BLOCK_COLOURS.filter((c) => c !== colour));
    const placed: Footprint[] = [];
    const objects: ObjectSpec[] = [];
    for (const jc of rng.shuffle([colour, other])) {
      const d = place(rng, placed, JAR.radius, JAR.radius, FINGER_GAP + 0.01);
      objects.push({
        name: `${jc}_jar`,
        type: "jar",
        colour: jc,
        shape: { kind: "cylinder", radius: JAR.radius, height: JAR.height },
        position: [d.x, d.y, JAR.height / 2],
        yaw: 0,
        fixed: false,
        density: 900,
      });
    }
    const d = place(rng, placed, LID.radius, LID.radius, FINGER_GAP);
    objects.push({
      name: "lid",
      type: "lid",
      colour: "grey",
      shape: { kind: "cylinder", radius: LID.radius, height: LID.height },
      position: [d.x, d.y, LID.height / 2],
      yaw: 0,
      fixed: false,
    });
    return { instruction: `close the ${colour} jar`, objects, goal: { jar: `${colour}_jar`, lid: "lid" } };
  },
  check(ctx) {
    const jar = String(ctx.goal.jar);
    const lid = String(ctx.goal.lid);
    return [
      restsOn(ctx, lid, jar),
      centredOn(ctx, lid, jar, LID_TOLERANCE),
      upright(ctx, lid),
      upright(ctx, jar),
      nothingGrasped(ctx),
    ];
  },
};
