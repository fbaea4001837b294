/**
 * Scripted experts. The plain expert plans every move from the first look and never checks (it proves each
 * seed is solvable with failure modes off); the retrying expert looks after every move, reads the error
 * codes and re-plans from the new state, as the MALMM supervisor does.
 */
import type { Goal } from "../tasks/index.js";
import type { RobotApi } from "./api.js";
import { PLANNERS } from "./planners.js";
import { Driver, MotionFailure, liftToSafe, pick, place } from "./skills.js";

export { envApi, type RobotApi } from "./api.js";
export { graspYaw, safeHeight, type Op, type PlaceTarget } from "./skills.js";
export { PLANNERS, freeSpot, type Planner } from "./planners.js";

export type ExpertKind = "expert" | "retry-expert";
export const EXPERTS: readonly ExpertKind[] = ["expert", "retry-expert"];

export interface ExpertOutcome {
  claimed: boolean;
  reason: string;
  /** Pick-and-place attempts made. */
  moves: number;
}

function planner(task: string) {
  const p = PLANNERS[task];
  if (!p) throw new Error(`no expert for task ${task}`);
  return p;
}

/** The plain expert: the whole plan from the first observation, executed blind. */
export async function runPlainExpert(api: RobotApi, task: string, goal: Goal): Promise<ExpertOutcome> {
  const d = new Driver(api, false);
  const ops = planner(task).plan(await api.observe(), goal);
  for (const op of ops) {
    await pick(d, op.object);
    await place(d, op.target);
  }
  const reason = `executed ${ops.length} pick-and-place move(s)`;
  await api.finish(true, reason);
  return { claimed: true, reason, moves: ops.length };
}

/** The retrying expert: one move at a time, re-planned from a fresh observation; failures are read, not ignored. */
export async function runRetryExpert(
  api: RobotApi,
  task: string,
  goal: Goal,
  maxMoves = 16,
): Promise<ExpertOutcome> {
  const d = new Driver(api, true);
  const p = planner(task);
  let moves = 0;
  let verdict: "done" | "stuck" | "out of moves" = "out of moves";
  while (moves < maxMoves) {
    const obs = await api.observe();
    const next = p.next(obs, goal);
    if (next === "done" || next === "stuck") {
      verdict = next;
      break;
    }
    moves++;
    try {
      if (obs.gripper.holding !== next.object) await pick(d, next.object);
      await place(d, next.target);
    } catch (e) {
      if (!(e instanceof MotionFailure)) throw e;
      // Back off upwards (ignoring what that reports) and look again.
      const loose = new Driver(api, false);
      await liftToSafe(loose, await api.observe());
      if (!(await api.observe()).gripper.holding) await loose.open();
    }
  }
  const claimed = verdict === "done";
  const reason = claimed
    ? `goal reached after ${moves} move(s)`
    : `gave up (${verdict}) after ${moves} move(s)`;
  await api.finish(claimed, reason);
  return { claimed, reason, moves };
}

export function runExpert(kind: ExpertKind, api: RobotApi, task: string, goal: Goal): Promise<ExpertOutcome> {
  return kind === "expert" ? runPlainExpert(api, task, goal) : runRetryExpert(api, task, goal);
}
