export * from "./perceive.js";
export { renderCode, renderHistory, renderHumanInputs, renderPlan } from "./context.js";
export {
  boundHistory,
  historyBound,
  type BoundedHistory,
  type BoundHistoryOptions,
  type StepView,
} from "./history.js";
