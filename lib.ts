/**
 * pda as a library (`import { runQuery } from "pda"`): the same runtime the `pda` command wires, from one
 * door. `createAgent` opens the config's servers, models, store and human channel once for many queries;
 * `runQuery` is one query with everything closed after it. The parts are exported for those who wire their own.
 */
import { openRuntime, type GlobalOptions, type Runtime } from "./cli/index.js";
import { defaultDbPath, type AgentSession } from "./core/index.js";
import type { LoopEvent } from "./agent/index.js";
import { SessionStore } from "./memory/index.js";

export { AgentLoop, summarize, type LoopDeps, type LoopEvent, type SessionDriver } from "./agent/index.js";
export { MultiMCP, type MultiMCPOptions } from "./mcp_servers/index.js";
export { SessionStore } from "./memory/index.js";
export { createModels, loadModelsConfig, type ModelRouter } from "./llm/index.js";
export {
  createChannel,
  PolicyChannel,
  ScriptedChannel,
  TerminalChannel,
  type HumanChannel,
} from "./hil/index.js";
export { configDir, configSource, loadProfile, type ConfigSource, type Profile } from "./config/index.js";
export {
  BudgetExceeded,
  ConfigError,
  ModelError,
  PdaError,
  StoreError,
  ToolError,
  isPdaError,
  type AgentSession,
  type ModelProvider,
} from "./core/index.js";

export interface AgentOptions {
  /** Config folder or a file in it; default: discovery as for the CLI (PDA_CONFIG, .pda/, user, bundled). */
  config?: string;
  /** SQLite session store; default: PDA_DB, else the user's data directory. */
  db?: string;
  /** provider[:model], e.g. "gemini", "openai:gpt-5-mini", "scripted:demo.yaml"; default as `pda models` says. */
  model?: string;
  /** A profile of profiles.yaml. */
  profile?: string;
  /** Who answers the agent's questions: "policy:fail" (the default here), "scripted:<file>", "terminal". */
  hil?: string;
  /** Export OpenTelemetry traces and metrics. */
  otel?: boolean;
}

export interface RunQueryOptions {
  signal?: AbortSignal;
  /** Every loop event as it happens (the CLI's trace is drawn from these). */
  onEvent?: (e: LoopEvent) => void;
}

export interface Agent {
  /** Runs one query to an end state; the session is logged to the store. */
  run(query: string, options?: RunQueryOptions): Promise<AgentSession>;
  /** The servers, models, store and channel opened for this agent. */
  readonly runtime: Runtime;
  close(): Promise<void>;
}

export async function createAgent(options: AgentOptions = {}): Promise<Agent> {
  const opts: GlobalOptions = { ...options, hil: options.hil ?? "policy:fail" };
  const runtime = await openRuntime(opts);
  try {
    await runtime.router?.prepare();
  } catch (e) {
    await runtime.close();
    throw e;
  }
  return {
    runtime,
    run: (query, o = {}) => runtime.loop({ signal: o.signal, onEvent: o.onEvent }).run(query),
    close: () => runtime.close(),
  };
}

/** One query with a fresh agent, closed after it. */
export async function runQuery(
  query: string,
  options: AgentOptions & RunQueryOptions = {},
): Promise<AgentSession> {
  const agent = await createAgent(options);
  try {
    return await agent.run(query, options);
  } finally {
    await agent.close();
  }
}

/** The session store for reading past sessions (`path` default: PDA_DB, else the user's data directory). */
export function openStore(path = process.env.PDA_DB ?? defaultDbPath()): SessionStore {
  return SessionStore.open(path);
}
