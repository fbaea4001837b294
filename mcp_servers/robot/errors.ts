/** Misuse of the simulator (not a motion failure, which is an observation): the MCP tools turn these into isError results. */
// Not core/index.js: that loads every core schema, and the server process should start lean (#16).
import { PdaError } from "../../core/errors.js";

export type RobotErrorCode =
  | "NO_EPISODE"
  | "EPISODE_FINISHED"
  | "UNKNOWN_TASK"
  | "UNKNOWN_OBJECT"
  | "BAD_VARIATION"
  | "BAD_ARGUMENT"
  | "CHECK_DISABLED";

export class RobotError extends PdaError<RobotErrorCode> {
  constructor(code: RobotErrorCode, message: string) {
    super(code, message, { exitCode: 2 });
  }
}
