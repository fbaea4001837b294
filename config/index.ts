export * from "./schema.js";
export * from "./load.js";
