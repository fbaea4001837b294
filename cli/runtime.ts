/**
 * Wires what a command needs from the global options: config folder, profile, models, the human channel,
 * hub and store. Everything opened here is closed by `close()`.
 */
import { answerElicitations } from "./elicit.js";
import { hubNamespaces } from "./services.js";
import { SamplingLedger, answerSampling } from "./sampling.js";
import { dirname } from "node:path";
import type { Command } from "commander";
import type { Namespaces } from "../action/index.js";
import {
  AgentLoop,
  AgentTeam,
  MODEL_ROLES,
  loadAgentsConfig,
  storeMemory,
  type LoopDeps,
  type MemoryService,
  type SessionDriver,
  type TeamOptions,
} from "../agent/index.js";
import { configDir, configFile, loadProfile, type Profile } from "../config/index.js";
import { hubConfigFile } from "./hub.js";
import { StoreError, defaultDbPath, type ModelProvider, type SessionRecorder } from "../core/index.js";
import { fileSystemMessage } from "./context.js";
import { HUB_LOGGER } from "./trace.js";
import { keepSandboxOnBaseline } from "./wasm-budget.js";
import { createChannel, toHumanInput, type HumanChannel } from "../hil/index.js";
import { createModels, loadModelsConfig, type ModelRouter } from "../llm/index.js";
import { MultiMCP, type HubEvent } from "../mcp_servers/index.js";
import { SessionStore } from "../memory/index.js";
import { openTelemetry, type Telemetry } from "../telemetry/index.js";

/** A server_state event as a session log note, when it is news: down, retried, or back after a retry. */
function serverStateNote(e: Extract<HubEvent, { type: "server_state" }>) {
  if (e.state === "failed") return { level: "error", message: `failed: ${e.error ?? ""}` };
  if (e.state === "crashed") return { level: "error", message: `crashed: ${e.error ?? ""}` };
  if (e.state === "connecting" && e.retry) return { level: "warning", message: `retry ${e.retry}` };
  return undefined;
}

export interface GlobalOptions {
  config?: string;
  db?: string;
  model?: string;
  profile?: string;
  hil?: string;
  verbose?: boolean;
  json?: boolean;
  /** Only the answer on stdout (run, chat, resume). */
  quiet?: boolean;
  /** Send traces and metrics over OTLP (as OTEL_EXPORTER_OTLP_ENDPOINT or the profile's `otel: true` do). */
  otel?: boolean;
}

export function globalOptions(cmd: Command): GlobalOptions {
  return cmd.optsWithGlobals() as GlobalOptions;
}

export function dbPath(opts: GlobalOptions): string {
  return opts.db ?? process.env.PDA_DB ?? defaultDbPath();
}

/** The session store; `redact`: the profile's extra redaction patterns (they matter to writers only). */
export function openStore(
  opts: GlobalOptions,
  redact?: string[],
  more: { groupCommitMs?: number } = {},
): SessionStore {
  const path = dbPath(opts);
  try {
    return SessionStore.open(path, { redact, ...more });
  } catch (e) {
    const fs = fileSystemMessage(e);
    if (fs) throw new StoreError("STORE_NOT_FOUND", `session store ${path}: ${fs}`, { cause: e });
    throw e;
  }
}

/** The hub, knowing servers' tools from the store's cache: a server starts when a session first calls it. */
export async function openHub(opts: GlobalOptions, store: SessionStore): Promise<MultiMCP> {
  return MultiMCP.start(hubConfigFile(opts.config), { cache: store.toolLists() });
}

export interface Runtime {
  profile: Profile;
  profileName: string;
  store: SessionStore;
  hub: MultiMCP;
  models: { perception: ModelProvider; decision: ModelProvider };
  /** What each role uses and why (absent when the models were given, as in replay). */
  router?: ModelRouter;
  human: HumanChannel;
  /** The agent team, when the profile names an agent (config/agents.yaml). */
  team?: AgentTeam;
  /** OpenTelemetry export, when it is on: every loop's sessions are traced through it. */
  telemetry?: Telemetry;
  /** What loops log to: the store, traced when OTel is on (for model calls made beside a loop: a judge's). */
  recorder: SessionRecorder;
  /** A plain loop, or the profile's agent holding the conversation (sub-agents and handoffs with it). */
  loop(extra?: Partial<LoopDeps>): SessionDriver;
  close(): Promise<void>;
}

export interface RuntimeOverrides {
  /** Use these models instead of `--model` (replay). */
  models?: Runtime["models"];
  /** Models per agent session of a team, over agents.yaml's (replay plays each session its own outputs). */
  modelFor?: TeamOptions["modelFor"];
  /** The store's group-commit window (memory's SessionStoreOptions): batch runs and queue workers set it. */
  groupCommitMs?: number;
}

export async function openRuntime(opts: GlobalOptions, overrides: RuntimeOverrides = {}): Promise<Runtime> {
  keepSandboxOnBaseline();
  const dir = configDir(opts.config);
  const { name, profile } = loadProfile(dir, opts.profile);
  // Models and the channel first: a missing key or a bad --hil should fail before any server is spawned.
  const router = overrides.models
    ? undefined
    : createModels({ model: opts.model, config: loadModelsConfig(dirname(configFile(dir, "models.yaml"))) });
  const models = overrides.models ?? { perception: router!, decision: router! };
  const team = profile.agent
    ? openTeam(dir, name, profile.agent, opts, overrides, (hits) => storeMemory(store, hits))
    : undefined;
  // No isTTY: the channel finds the terminal itself, so `pda run … --json > out.json` still asks the person.
  const human = createChannel(opts.hil, {
    terminal: { timeoutMs: profile.hil.timeout_ms, onTimeout: profile.hil.on_timeout },
  });
  const store = openStore(opts, profile.redact, { groupCommitMs: overrides.groupCommitMs });
  const telemetry = await openTelemetry({
    flag: opts.otel,
    profile: profile.otel,
    redact: (t) => store.redact(t),
  }).catch(async (e: unknown) => {
    store.close();
    await team?.close();
    throw e;
  });
  const hub = await openCheckedHub(opts, store, profile, team).catch(async (e: unknown) => {
    await telemetry?.shutdown();
    throw e;
  });
  const recorder = telemetry?.recorder(store) ?? store;
  const sessions = routeHubToSessions(hub, store, recorder, human);
  // Servers' sampling requests are model calls of the session running the tool: its ledger account says which.
  const ledger = new SamplingLedger();
  answerSampling(hub, {
    human,
    model: models.decision,
    ledger,
    recorder,
    onAnswer: (id, question, answer) => recorder.recordHumanInput(id, toHumanInput(question, answer)),
  });
  const base = (): Omit<LoopDeps, "services"> => ({
    models,
    host: hub,
    recorder,
    journal: store,
    profile,
    profileName: name,
    human,
    memory: storeMemory(store, profile.memory_hits),
    ledger,
  });
  return {
    profile,
    profileName: name,
    store,
    hub,
    models,
    router,
    human,
    team: team?.team,
    telemetry,
    recorder,
    loop: (extra) => {
      const given = { ...base(), ...extra };
      given.services ??= codeServices(hub, given.memory);
      const onEvent = given.onEvent;
      const traced = telemetry?.events();
      const deps: LoopDeps = {
        ...given,
        onEvent: sessions.track((e) => {
          traced?.(e);
          onEvent?.(e);
        }),
      };
      return team ? team.team.loop(profile.agent!, deps) : new AgentLoop(deps);
    },
    async close() {
      await hub.close();
      store.close();
      await router?.close();
      await team?.close();
      // Last: the spans of everything above are ended by now.
      await telemetry?.shutdown();
    },
  };
}

/** The hub, its servers started and the team's tool allowlists checked against them; on failure all is closed. */
async function openCheckedHub(
  opts: GlobalOptions,
  store: SessionStore,
  profile: Profile,
  team: ReturnType<typeof openTeam> | undefined,
): Promise<MultiMCP> {
  let hub: MultiMCP | undefined;
  try {
    hub = await openHub(opts, store);
    team?.team.checkTools(profile.agent!, hub.tools());
    return hub;
  } catch (e) {
    await hub?.close();
    store.close();
    await team?.close();
    throw e;
  }
}

/**
 * Server log messages, server state notes and elicitations belong to the session being run; with none or
 * several running (batch), logs are kept unattached and elicitations are not logged to a session. `track`
 * wraps a loop's onEvent so the running sessions are known.
 */
function routeHubToSessions(
  hub: MultiMCP,
  store: SessionStore,
  recorder: Pick<SessionStore, "recordHumanInput">,
  human: HumanChannel,
) {
  const running = new Set<string>();
  const current = () => (running.size === 1 ? [...running][0]! : undefined);
  // A server going down, being retried or coming back is part of the session's story (pda show).
  const hubNote = (sessionId: string | null, server: string, level: string, message: string) =>
    store.recordServerLog(sessionId, {
      server,
      level,
      logger: HUB_LOGGER,
      message,
      at: new Date().toISOString(),
    });
  hub.onEvent((e) => {
    if (e.type === "server_state") {
      const note = serverStateNote(e);
      if (note) hubNote(current() ?? null, e.server, note.level, note.message);
      return;
    }
    if (e.type !== "log") return;
    const message = typeof e.data === "string" ? e.data : JSON.stringify(e.data);
    store.recordServerLog(current() ?? null, {
      server: e.server,
      level: e.level,
      logger: e.logger,
      message,
      at: new Date().toISOString(),
    });
  });
  answerElicitations(hub, human, (question, answer) => {
    const id = current();
    if (id) recorder.recordHumanInput(id, toHumanInput(question, answer));
  });
  return {
    track:
      (onEvent: LoopDeps["onEvent"]): LoopDeps["onEvent"] =>
      (e) => {
        if (e.type === "session_start") {
          running.add(e.session_id);
          // Servers that failed before this session started are part of its story too.
          for (const d of hub.availability().down)
            hubNote(e.session_id, d.server, "error", `down: ${d.reason}`);
        }
        if (e.type === "session_end") running.delete(e.session.session_id);
        onEvent?.(e);
      },
  };
}

/**
 * What CODE can reach beside the tools: past sessions (in the loop's memory scope), the servers' resources
 * and prompts.
 */
function codeServices(hub: MultiMCP, memory: MemoryService | undefined): Namespaces {
  return {
    memory: {
      search: async ([text, options]) =>
        memory?.search?.(String(text ?? ""), Number((options as { limit?: number })?.limit ?? 5)) ?? [],
    },
    ...hubNamespaces(hub),
  };
}

/**
 * The team of the profile's agent from agents.yaml, with a provider for each model an agent of it names
 * (built now, so a missing key fails before any server starts). `--model` (or replay's models) wins over them.
 */
function openTeam(
  dir: string,
  profileName: string,
  agent: string,
  opts: GlobalOptions,
  overrides: RuntimeOverrides,
  memory: (hits: number) => MemoryService,
) {
  const routers = new Map<string, ModelRouter>();
  const team = new AgentTeam({
    config: loadAgentsConfig(dir),
    memory,
    modelFor: (a, role, start) => {
      const given = overrides.modelFor?.(a, role, start);
      if (given) return given;
      const spec = a.models[role];
      return spec ? routers.get(spec) : undefined;
    },
  });
  team.agent(agent, `profile "${profileName}"`);
  if (!opts.model && !overrides.models) {
    const modelsConfig = loadModelsConfig(dirname(configFile(dir, "models.yaml")));
    for (const a of team.reachable(agent)) {
      for (const role of MODEL_ROLES) {
        const spec = a.models[role];
        if (spec && !routers.has(spec))
          routers.set(spec, createModels({ model: spec, config: modelsConfig, roles: [role] }));
      }
    }
  }
  return {
    team,
    async close() {
      for (const r of routers.values()) await r.close();
    },
  };
}
