/** The task registry. */
import { RobotError } from "../errors.js";
import { closeJar } from "./close_jar.js";
import { emptyContainer } from "./empty_container.js";
import { meatOffGrill } from "./meat_off_grill.js";
import { putBlockInTarget } from "./put_block_in_target.js";
import { rubbishInBin } from "./rubbish_in_bin.js";
import { stackBlocks } from "./stack_blocks.js";
import { LayoutFull } from "./layout.js";
import { Rng } from "../rng.js";
import type { TaskDef, TaskInstance } from "./types.js";

export type { TaskDef, TaskInstance, Goal, CheckContext } from "./types.js";
export { stackedColumn, STACK_BLOCK } from "./stack_blocks.js";

export const TASKS: readonly TaskDef[] = [
  putBlockInTarget,
  stackBlocks,
  emptyContainer,
  closeJar,
  rubbishInBin,
  meatOffGrill,
];

export const TASK_NAMES: readonly string[] = TASKS.map((t) => t.name);

export function getTask(name: string): TaskDef {
  const t = TASKS.find((x) => x.name === name);
  if (!t)
    throw new RobotError(
      "UNKNOWN_TASK",
      `unknown task ${JSON.stringify(name)}; tasks: ${TASK_NAMES.join(", ")}`,
    );
  return t;
}

/** The variation a seed plays when none is given: spread evenly over the task's variations. */
export function variationForSeed(task: TaskDef, seed: number): number {
  return ((seed % task.variations) + task.variations) % task.variations;
}

/** The seeded layout of a task; a crowded draw is redrawn from the next stream, so it stays deterministic. */
export function buildTask(task: TaskDef, seed: number, variation: number): TaskInstance {
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      return task.build(Rng.keyed(task.name, seed, variation, "layout", attempt), variation);
    } catch (e) {
      if (!(e instanceof LayoutFull)) throw e;
    }
  }
  throw new Error(`${task.name}: no layout found for seed ${seed} in 100 draws`);
}
