export * from "./context.js";
