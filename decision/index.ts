export * from "./decide.js";
export * from "./tools.js";
