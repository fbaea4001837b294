/** Replaying a logged session tree against its own recorded model outputs. */
export * from "./replay.js";
