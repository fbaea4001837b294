/** The agent: the loop kernel (kernel/), agent teams (team/) and replay (replay/), each behind its own door. */
export * from "./kernel/index.js";
export * from "./team/index.js";
export * from "./replay/index.js";
