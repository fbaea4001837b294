/**
 * RLBench-style "stack blocks": N (2..4) blocks of one colour stacked in the stack zone; spare blocks of that
 * colour and blocks of other colours distract. The variation sets colour and N.
 */
import { BLOCK_COLOURS, type ObjectSpec } from "../objects.js";
import type { Condition } from "../schemas.js";
import { FINGER_GAP, anyYaw, place, type Footprint } from "./layout.js";
import { nothingGrasped } from "./checks.js";
import type { CheckContext, TaskDef } from "./types.js";

export const STACK_BLOCK = 0.045;
const ZONE = 0.1;

function decode(v: number): { colour: (typeof BLOCK_COLOURS)[number]; count: number } {
  return { colour: BLOCK_COLOURS[Math.floor(v / 3)]!, count: 2 + (v % 3) };
}

/** The tallest column of goal-coloured blocks standing in the zone, from the table up. */
export function stackedColumn(ctx: CheckContext, blocks: string[], zone: string): string[] {
  let best: string[] = [];
  for (const base of blocks) {
    if (ctx.facts.on.get(base) !== "table" || ctx.facts.in.get(base) !== zone) continue;
    const column = [base];
    for (;;) {
      const top = column[column.length - 1]!;
      const next = blocks.find((b) => !column.includes(b) && ctx.facts.on.get(b) === top);
      if (!next) break;
      column.push(next);
    }
    if (column.length > best.length) best = column;
  }
  return best;
}

export const stackBlocks: TaskDef = {
  name: "stack_blocks",
  description:
    "Stack N (2-4) blocks of the named colour in the stack zone; spare and other-coloured blocks distract.",
  variations: BLOCK_COLOURS.length * 3,
  describeVariation: (v) => {
    const { colour, count } = decode(v);
    return `${count} ${colour} blocks`;
  },
  build(rng, variation) {
    const { colour, count } = decode(variation);
    const spare = count < 4 ? 1 : 0;
    const others = rng.shuffle(BLOCK_COLOURS.filter((c) => c !== colour)).slice(0, 2);
    const placed: Footprint[] = [];
    const zone = place(rng, placed, ZONE / 2, ZONE / 2, 0.03);
    const objects: ObjectSpec[] = [
      {
        name: "stack_zone",
        type: "target_zone",
        colour: "green",
        shape: { kind: "zone", size: [ZONE, ZONE] },
        position: [zone.x, zone.y, 0],
        yaw: 0,
        fixed: true,
      },
    ];
    const block = (name: string, c: (typeof BLOCK_COLOURS)[number]) => {
      const d = place(
        rng,
        placed,
        anyYaw(STACK_BLOCK, STACK_BLOCK),
        anyYaw(STACK_BLOCK, STACK_BLOCK),
        FINGER_GAP,
      );
      objects.push({
        name,
        type: "block",
        colour: c,
        shape: { kind: "box", size: [STACK_BLOCK, STACK_BLOCK, STACK_BLOCK] },
        position: [d.x, d.y, STACK_BLOCK / 2],
        yaw: rng.uniform(-Math.PI / 4, Math.PI / 4),
        fixed: false,
        cube: true,
      });
    };
    const targets: string[] = [];
    for (let i = 1; i <= count + spare; i++) {
      targets.push(`${colour}_block_${i}`);
      block(`${colour}_block_${i}`, colour);
    }
    for (const c of others) block(`${c}_block`, c);
    return {
      instruction: `stack ${count} ${colour} blocks in the stack zone`,
      objects,
      goal: { colour, count, zone: "stack_zone", blocks: targets },
    };
  },
  check(ctx) {
    const blocks = ctx.goal.blocks as string[];
    const count = Number(ctx.goal.count);
    const zone = String(ctx.goal.zone);
    const column = stackedColumn(ctx, blocks, zone);
    const toppled = column.filter((b) => !ctx.facts.upright.get(b));
    const conditions: Condition[] = [
      {
        name: `${count} ${String(ctx.goal.colour)} blocks stacked in ${zone}`,
        met: column.length >= count,
        detail: column.length
          ? `column from the table up: ${column.join(" < ")}`
          : `no ${String(ctx.goal.colour)} block stands in ${zone}`,
      },
      {
        name: "stacked blocks upright",
        met: toppled.length === 0,
        detail: toppled.length ? `tilted: ${toppled.join(", ")}` : "every block in the column sits flat",
      },
      nothingGrasped(ctx),
    ];
    return conditions;
  },
};
