/** One episode's state: the physics scene, the gripper, the failure stream, the path drawn, the tallies. */
import {
  add,
  dist2d,
  quatConj,
  quatFromYaw,
  quatMul,
  rotate,
  roundVec,
  round,
  sub,
  type Quat,
  type Vec3,
} from "./geometry.js";
import { GRIPPER, type GripperPose } from "./gripper.js";
import { isUpright, sceneFacts, type SceneFacts } from "./observation.js";
import { PhysicsScene, type Pose } from "./physics.js";
import { Rng } from "./rng.js";
import type { ErrorCode, FailureSettings, GripperState, MotionEvent } from "./schemas.js";
import type { TaskDef, TaskInstance } from "./tasks/index.js";

export interface Held {
  name: string;
  /** The object's pose in the gripper frame at grasp time (attachment keeps it). */
  local: { position: Vec3; rotation: Quat };
  /** How far the grasp was from the object's centre (m): raises the slip chance. */
  offCentre: number;
  /** TCP height above the object's lowest point. */
  below: number;
}

export interface Snapshot {
  position: Map<string, Vec3>;
  upright: Map<string, boolean>;
  on: Map<string, string | null>;
}

export class Episode {
  readonly scene: PhysicsScene;
  readonly failureRng: Rng;
  pose: GripperPose = { position: [...GRIPPER.home], yaw: 0 };
  opening: number = GRIPPER.maxOpening;
  closed = false;
  held: Held | null = null;
  /** TCP positions of recent motions, for the picture. */
  readonly path: Vec3[] = [[...GRIPPER.home]];
  actions = 0;
  toolCalls = 0;
  readonly codes = new Map<ErrorCode, number>();
  finished: { claimed: boolean; reason: string } | null = null;

  constructor(
    readonly task: TaskDef,
    readonly seed: number,
    readonly variation: number,
    readonly instance: TaskInstance,
    readonly failures: FailureSettings,
  ) {
    this.scene = new PhysicsScene(instance.objects);
    this.failureRng = Rng.keyed(task.name, seed, variation, "failures");
    // Let everything settle into contact before the first look.
    this.scene.settle(200);
  }

  get holding(): string | null {
    return this.held?.name ?? null;
  }

  gripperState(): GripperState {
    return {
      position: roundVec(this.pose.position),
      yaw: round(this.pose.yaw),
      opening: round(this.opening),
      closed: this.closed,
      holding: this.holding,
    };
  }

  facts(): SceneFacts {
    return sceneFacts(this.scene, this.holding);
  }

  /** Where the held object is when the gripper is at `pose`. */
  heldPose(pose: GripperPose): Pose | null {
    if (!this.held) return null;
    const q = quatFromYaw(pose.yaw);
    return {
      position: add(pose.position, rotate(q, this.held.local.position)),
      rotation: quatMul(q, this.held.local.rotation),
    };
  }

  attach(name: string, offCentre: number): void {
    const obj = this.scene.pose(name);
    const inv = quatConj(quatFromYaw(this.pose.yaw));
    const pts = this.scene.hullPoints(name);
    const lowest = Math.min(...pts.map((p) => p[2]));
    this.held = {
      name,
      local: {
        position: rotate(inv, sub(obj.position, this.pose.position)),
        rotation: quatMul(inv, obj.rotation),
      },
      offCentre,
      below: this.pose.position[2] - lowest,
    };
    this.scene.setHeld(name, true);
  }

  detach(): string | null {
    const name = this.holding;
    if (name) this.scene.setHeld(name, false);
    this.held = null;
    return name;
  }

  snapshot(): Snapshot {
    const facts = this.facts();
    const position = new Map<string, Vec3>();
    for (const [name, o] of this.scene.objects)
      if (!o.spec.fixed) position.set(name, this.scene.pose(name).position);
    return { position, upright: facts.upright, on: facts.on };
  }

  /**
   * Events for free objects that moved since `before`: OBJECT_TOPPLED when one tipped over or fell off what it
   * stood on, OBJECT_MOVED when it only slid. `skip` names objects the caller reports itself.
   */
  changes(before: Snapshot, skip: ReadonlySet<string>): MotionEvent[] {
    const after = this.facts();
    const events: MotionEvent[] = [];
    for (const [name, p0] of before.position) {
      if (skip.has(name) || name === this.holding) continue;
      const p1 = this.scene.pose(name).position;
      const wasUp = before.upright.get(name);
      const isUp = isUpright(this.scene, name);
      const on0 = before.on.get(name) ?? null;
      const on1 = after.on.get(name) ?? null;
      const where = `(${p1.map((v) => v.toFixed(3)).join(", ")})`;
      if (wasUp && !isUp) {
        events.push({
          code: "OBJECT_TOPPLED",
          object: name,
          message: `${name} toppled over; it now lies at ${where}`,
        });
      } else if (on0 !== on1 && on0 !== null) {
        events.push({
          code: "OBJECT_TOPPLED",
          object: name,
          message: `${name} fell from ${on0} and now rests on ${on1 ?? "nothing"} at ${where}`,
        });
      } else if (dist2d(p0, p1) > 0.01 || Math.abs(p0[2] - p1[2]) > 0.01) {
        events.push({ code: "OBJECT_MOVED", object: name, message: `${name} was pushed to ${where}` });
      }
    }
    return events;
  }

  recordPath(p: Vec3): void {
    const last = this.path[this.path.length - 1];
    if (last && Math.hypot(last[0] - p[0], last[1] - p[1], last[2] - p[2]) < 0.01) return;
    this.path.push([...p]);
    if (this.path.length > 600) this.path.splice(0, this.path.length - 600);
  }
}
