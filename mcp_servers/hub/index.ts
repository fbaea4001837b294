export {
  MultiMCP,
  SAMPLING_REJECTED,
  type MultiMCPOptions,
  type ElicitationHandler,
  type SamplingHandler,
} from "./multi.js";
export { loadHubConfig, parseHubConfig, hubConfigFromObject, HubConfigSchema } from "./config.js";
export type { HubConfig, HubConfigInput, IdpConfig, ServerConfig } from "./config.js";
export type { HubEvent, HubEventListener, ServerState, ServerStatus } from "./events.js";
export type { SpawnFn } from "./stdio.js";
export {
  snapshotLaunch,
  SnapshotManifest,
  SNAPSHOT_DIR,
  SNAPSHOT_MANIFEST,
  type Launch,
} from "./snapshot.js";
