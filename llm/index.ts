/**
 * Model providers behind one interface (core/model.ts): schema in, validated value + usage + latency out.
 * The contract's types are re-exported so callers of a provider need one import.
 */
export type {
  GenerateRequest,
  GenerateResult,
  ModelProvider,
  RawCompletion,
  RawTurn,
} from "../core/index.js";
export {
  createProvider,
  createModels,
  createTransport,
  chooseDefault,
  roleSpec,
  parseModelSpec,
  ModelRouter,
  ScriptedProvider,
  PROVIDER_NAMES,
  type ProviderOptions,
  type DefaultChoice,
  type RoleModel,
} from "./create.js";
export {
  StructuredProvider,
  ModelOutputError,
  costOf,
  repairPrompt,
  type Transport,
  type ModelPrice,
} from "./structured.js";
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
  geminiAuth,
  geminiConfig,
  NO_GEMINI_KEY_MESSAGE,
  type GeminiOptions,
} from "./gemini.js";
export {
  OpenAITransport,
  DEFAULT_OPENAI_BASE_URL,
  buildChatRequest,
  type OpenAIOptions,
  type StructuredMode,
} from "./openai.js";
export {
  AnthropicTransport,
  DEFAULT_ANTHROPIC_BASE_URL,
  DEFAULT_ANTHROPIC_MODEL,
  NO_ANTHROPIC_KEY_MESSAGE,
  buildMessagesRequest,
  readMessage,
  type AnthropicOptions,
  type AnthropicOutput,
} from "./anthropic.js";
export { strictSchema, dropOptionalNulls } from "./strict-schema.js";
export { LlamaTransport, grammarSchema, type LlamaOptions } from "./llama.js";
export {
  ensureModelFile,
  hfSpec,
  modelCacheDir,
  type ModelFileSpec,
  type DownloadOptions,
} from "./download.js";
export {
  ScriptedTransport,
  Script,
  ScriptEntry,
  type ScriptedCall,
  type ScriptTolerance,
} from "./scripted.js";
export { DEFAULT_RETRY, TransientModelError, withRetry, type RetryPolicy } from "./retry.js";
export {
  ModelsFile,
  ModelFamily,
  familyOf,
  CallSettings,
  LocalModel,
  parseModelsConfig,
  loadModelsConfig,
  bundledModelsConfig,
  roleSettings,
} from "./config.js";
