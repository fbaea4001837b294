export * from "./schemas.js";
export * from "./errors.js";
export * from "./paths.js";
export * from "./time.js";
export * from "./tools.js";
export * from "./recorder.js";
export * from "./usage.js";
export * from "./session.js";
