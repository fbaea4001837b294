/** The public door of the robot simulator: environment, tasks, experts, rendering, episode runner (the server runs as a process: server.ts). */
export { RobotEnv, type ResetResult, type FinishResult, type EpisodeRecord } from "./env.js";
export { RobotError, type RobotErrorCode } from "./errors.js";
export { GRIPPER, WORKSPACE } from "./gripper.js";
export { loadRapier, rapierLoaded, PhysicsScene } from "./physics.js";
export { PALETTE, BLOCK_COLOURS, type ColourName, type ObjectType } from "./objects.js";
export { VIEWS, type View } from "./render/scene.js";
export * from "./schemas.js";
export {
  TASKS,
  TASK_NAMES,
  buildTask,
  getTask,
  variationForSeed,
  type TaskDef,
  type Goal,
} from "./tasks/index.js";
export {
  EXPERTS,
  envApi,
  runExpert,
  runPlainExpert,
  runRetryExpert,
  type ExpertKind,
  type ExpertOutcome,
  type RobotApi,
} from "./expert/index.js";
export {
  expertRunner,
  parseSeeds,
  parseTasks,
  runEpisodes,
  successTable,
  tableMarkdown,
  type EpisodeResult,
  type EpisodeRunner,
  type TaskRow,
} from "./runner.js";
