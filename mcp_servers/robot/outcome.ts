/** What a gripper action amounts to, and helpers shared by the motion and grip actions. */
import type { Vec3 } from "./geometry.js";
import type { Episode } from "./episode.js";
import type { QueryBox } from "./physics.js";
import type { ErrorCode, MotionEvent } from "./schemas.js";

export interface ActionOutcome {
  code: ErrorCode;
  message: string;
  events: MotionEvent[];
}

export const fmt = (p: readonly number[]) => `(${p.map((v) => v.toFixed(3)).join(", ")})`;

/** An object's box (cylinders as their bounding box) at a pose, shrunk so resting contact is not overlap. */
export function objectBox(
  ep: Episode,
  name: string,
  pose: { position: Vec3; rotation: QueryBox["rotation"] },
): QueryBox {
  const shape = ep.scene.get(name).spec.shape;
  const size: Vec3 =
    shape.kind === "cylinder"
      ? [2 * shape.radius, 2 * shape.radius, shape.height]
      : shape.kind === "box"
        ? shape.size
        : [0, 0, 0];
  return {
    size: [size[0] - 0.004, size[1] - 0.004, size[2] - 0.004],
    position: pose.position,
    rotation: pose.rotation,
  };
}
