/** Pick and place the way the MALMM prompts ask for: safe height, grasp at the centre, look after each move. */
import { GRIPPER } from "../gripper.js";
import type { MotionResult, ObjectObservation, Observation } from "../schemas.js";
import type { RobotApi } from "./api.js";

/** Where a placed object's bottom goes: on a surface (`z` = its height) or dropped from above a rim. */
export interface PlaceTarget {
  x: number;
  y: number;
  /** Height of the surface the object's bottom should end on, or the height to release it at when `drop`. */
  z: number;
  drop?: boolean;
}

export interface Op {
  object: string;
  target: PlaceTarget;
}

const CLEARANCE = 0.04;
const MIN_SAFE = 0.15;

export function find(obs: Observation, name: string): ObjectObservation {
  const o = obs.objects.find((x) => x.name === name);
  if (!o) throw new Error(`expert: no object ${name} in the observation`);
  return o;
}

/** TCP height above the lowest point of what the gripper carries (the fingertips when empty). */
function reachBelow(obs: Observation): number {
  const held = obs.gripper.holding ? obs.objects.find((o) => o.name === obs.gripper.holding) : undefined;
  return held ? Math.max(GRIPPER.tip, obs.gripper.position[2] - held.bbox.min[2]) : GRIPPER.tip;
}

/** A travel height that clears everything on the table with what is carried. */
export function safeHeight(obs: Observation): number {
  const top = Math.max(
    0,
    ...obs.objects.filter((o) => o.name !== obs.gripper.holding).map((o) => o.bbox.max[2]),
  );
  return Math.min(0.58, Math.max(MIN_SAFE, top + reachBelow(obs) + CLEARANCE));
}

function wrapHalf(a: number): number {
  let r = a % Math.PI;
  if (r > Math.PI / 2) r -= Math.PI;
  if (r <= -Math.PI / 2) r += Math.PI;
  return r;
}

/** The yaw that closes the fingers across the object's narrower side, and that width. */
export function graspYaw(o: ObjectObservation, current: number): { yaw: number; width: number } {
  const round =
    o.type === "jar" || o.type === "lid" || (o.type === "item" && o.size[0] === o.size[1] && o.yaw === 0);
  if (round) return { yaw: wrapHalf(current), width: o.size[0] };
  if (!o.upright && !["block", "item"].includes(o.type)) {
    const dx = o.bbox.max[0] - o.bbox.min[0];
    const dy = o.bbox.max[1] - o.bbox.min[1];
    return dx <= dy ? { yaw: 0, width: dx } : { yaw: Math.PI / 2, width: dy };
  }
  const alongX = { yaw: wrapHalf(o.yaw), width: o.size[0] };
  const alongY = { yaw: wrapHalf(o.yaw + Math.PI / 2), width: o.size[1] };
  if (Math.abs(alongX.width - alongY.width) > 1e-3) return alongX.width < alongY.width ? alongX : alongY;
  const turn = (y: number) => Math.abs(wrapHalf(y - current));
  return turn(alongX.yaw) <= turn(alongY.yaw) ? alongX : alongY;
}

/** Records every motion result; `strict` stops at the first failure (the retrying expert reads the code). */
export class Driver {
  readonly results: MotionResult[] = [];
  constructor(
    readonly api: RobotApi,
    readonly strict: boolean,
  ) {}

  private async run(p: Promise<MotionResult>): Promise<MotionResult> {
    const r = await p;
    this.results.push(r);
    if (this.strict && r.ok === false) throw new MotionFailure(r);
    return r;
  }
  move(x: number, y: number, z: number, yaw: number) {
    return this.run(this.api.moveTo(x, y, z, yaw));
  }
  open(width?: number) {
    return this.run(this.api.open(width));
  }
  close() {
    return this.run(this.api.close());
  }
}

export class MotionFailure extends Error {
  constructor(readonly result: MotionResult) {
    super(`${result.error_code}: ${result.message}`);
  }
}

/** Rise straight up to the safe height if below it. */
export async function liftToSafe(d: Driver, obs: Observation): Promise<void> {
  const safe = safeHeight(obs);
  const g = obs.gripper;
  if (g.position[2] < safe - 0.002) await d.move(g.position[0], g.position[1], safe, g.yaw);
}

export async function pick(d: Driver, name: string): Promise<void> {
  let obs = await d.api.observe();
  await liftToSafe(d, obs);
  obs = await d.api.observe();
  const o = find(obs, name);
  const { yaw, width } = graspYaw(o, obs.gripper.yaw);
  await d.open(Math.min(GRIPPER.maxOpening, width + 0.025));
  const safe = safeHeight(obs);
  const [x, y] = o.position;
  // Grasp at the centre, but keep the fingertips clear of whatever the object stands on.
  const z = Math.max(o.position[2], o.bbox.min[2] + GRIPPER.tip + 0.002);
  await d.move(x, y, safe, yaw);
  await d.move(x, y, z, yaw);
  await d.close();
  const after = await d.api.observe();
  await d.move(after.gripper.position[0], after.gripper.position[1], safeHeight(after), after.gripper.yaw);
}

export async function place(d: Driver, target: PlaceTarget): Promise<void> {
  let obs = await d.api.observe();
  await liftToSafe(d, obs);
  obs = await d.api.observe();
  const g = obs.gripper;
  const below = reachBelow(obs);
  const safe = safeHeight(obs);
  await d.move(target.x, target.y, safe, g.yaw);
  const release = target.drop ? target.z + below : target.z + 0.004 + below;
  await d.move(target.x, target.y, release, g.yaw);
  await d.open(Math.min(GRIPPER.maxOpening, g.opening + 0.02));
  const after = await d.api.observe();
  await d.move(target.x, target.y, safeHeight(after), after.gripper.yaw);
}
