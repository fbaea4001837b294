/** Model providers behind one interface: schema in, validated value + usage + latency out. */
export type * from "./types.js";
export {
  createProvider,
  parseModelSpec,
  ScriptedProvider,
  PROVIDER_NAMES,
  type ProviderOptions,
} from "./create.js";
export { StructuredProvider, costOf, repairPrompt, type Transport, type ModelPrice } from "./structured.js";
export {
  parseModelOutput,
  findJson,
  formatZodError,
  type ParseOutcome,
  type ParseFailureKind,
} from "./parse.js";
export {
  GeminiTransport,
  DEFAULT_GEMINI_MODEL,
  NO_GEMINI_KEY_MESSAGE,
  type GeminiOptions,
} from "./gemini.js";
export { ScriptedTransport, Script, ScriptEntry, type ScriptedCall } from "./scripted.js";
export { DEFAULT_RETRY, TransientModelError, withRetry, type RetryPolicy } from "./retry.js";
