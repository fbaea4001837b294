/** The narrow robot interface the experts drive: the same operations as the MCP tools. */
import type { RobotEnv } from "../env.js";
import type { MotionResult, Observation } from "../schemas.js";

export interface RobotApi {
  observe(): Promise<Observation>;
  moveTo(x: number, y: number, z: number, yaw: number): Promise<MotionResult>;
  open(width?: number): Promise<MotionResult>;
  close(): Promise<MotionResult>;
  finish(claimedSuccess: boolean, reason: string): Promise<unknown>;
}

/** Drive an in-process environment (the fast path for benchmarks and tests). */
export function envApi(env: RobotEnv): RobotApi {
  return {
    observe: async () => env.observe(),
    moveTo: async (x, y, z, yaw) => env.moveTo(x, y, z, yaw),
    open: async (width) => env.openGripper(width),
    close: async () => env.closeGripper(),
    finish: async (claimed, reason) => env.finish(claimed, reason),
  };
}
