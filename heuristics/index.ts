/**
 * heuristics/: pure checks and rankers, no I/O. One call per loop phase:
 * - before the session: guardQuery(query, {exists, blocklist})
 * - before each decision: toolRankerFor(tools).rank({query, step, stats, topK, alwaysInclude})
 * - before running a CODE step: guardCode(code, tools)
 * - after it ran: guardResult(value, {expect})
 * Findings go to the model with formatFindings(); a blocked step gets findingsToStepError(findings).
 */
export {
  Finding,
  FindingRule,
  Severity,
  Span,
  formatFindings,
  findingsToStepError,
  isBlocking,
} from "./finding.js";
export {
  guardQuery,
  QUERY_GUARD_DEFAULTS,
  type BlockTerm,
  type QueryGuardOptions,
  type QueryGuardResult,
} from "./query.js";
export { guardCode, findToolCalls, type CodeGuardOptions, type CodeGuardResult } from "./code.js";
export { FORBIDDEN_GLOBALS, JS_BUILTINS, SANDBOX_HELPERS } from "./js-names.js";
export {
  guardResult,
  type ResultExpectation,
  type ResultGuardOptions,
  type ResultGuardResult,
} from "./result.js";
export { estimateTokens, toPromptText, truncateForPrompt } from "./text.js";
export {
  createToolRanker,
  expandQuery,
  rankTools,
  toolRankerFor,
  type RankOptions,
  type RankResult,
  type ToolRanker,
  type ToolScore,
  type ToolStat,
} from "./rank.js";
