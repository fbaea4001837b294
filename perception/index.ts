export * from "./perceive.js";
