/**
 * The agent: the loop kernel (kernel/), agent teams (team/) and replay (replay/), each behind its own door.
 * This door exports what other folders use; the agent's own tests import the three doors.
 */
export {
  AgentLoop,
  NO_MEMORY,
  SpendLedger,
  chargeUsage,
  storeMemory,
  summarize,
  type InterruptSource,
  type LoopDeps,
  type LoopEvent,
  type MemoryService,
  type SessionDriver,
  type SpendAccount,
} from "./kernel/index.js";
export {
  AgentTeam,
  MODEL_ROLES,
  loadAgentsConfig,
  parseAgentsConfig,
  type TeamOptions,
} from "./team/index.js";
export {
  loggedTree,
  replayMatches,
  TreeReplay,
  type SessionComparison,
  type StepDifference,
} from "./replay/index.js";
