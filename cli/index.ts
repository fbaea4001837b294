export * from "./context.js";
export { openRuntime, type GlobalOptions, type Runtime } from "./runtime.js";
