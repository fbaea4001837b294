/** The contract every task implements: a seeded layout, an instruction, and an exact success check. */
import type { Rng } from "../rng.js";
import type { ObjectSpec } from "../objects.js";
import type { PhysicsScene } from "../physics.js";
import type { SceneFacts } from "../observation.js";
import type { Condition } from "../schemas.js";

/** Names and numbers the instruction refers to; given to experts and shown by reset. */
export type Goal = Record<string, string | number | string[]>;

export interface TaskInstance {
  instruction: string;
  objects: ObjectSpec[];
  goal: Goal;
}

export interface CheckContext {
  scene: PhysicsScene;
  facts: SceneFacts;
  holding: string | null;
  goal: Goal;
}

export interface TaskDef {
  name: string;
  description: string;
  /** Number of variations (colour, count, target, ...); a seed picks one when none is given. */
  variations: number;
  describeVariation(variation: number): string;
  build(rng: Rng, variation: number): TaskInstance;
  /** Every condition must hold for success (modelled on RLBench's success conditions). */
  check(ctx: CheckContext): Condition[];
}
