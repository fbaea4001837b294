/** memory/: the SQLite session store — session log, memory search, tool statistics, batch rows. */
export { SessionStore, type SessionStoreOptions } from "./store.js";
export { intentDir, readIntentFile, readJournalFile, type JournalLines } from "./intent-file.js";
export { MIGRATIONS, SCHEMA_VERSION, type Migration } from "./migrations.js";
export { DEFAULT_LIMITS, type SanitizeLimits } from "./sanitize.js";
export { describeReliability } from "./stats.js";
export * from "./schemas.js";
export { AgentToolStat } from "./agents.js";
