/**
 * Wires what a command needs from the global options: config folder, profile, models, hub and store.
 * Everything opened here is closed by `close()`, also on Ctrl-C.
 */
import { join } from "node:path";
import type { Command } from "commander";
import { AgentLoop, storeMemory, type LoopDeps } from "../agent/index.js";
import { configDir, loadProfile, type Profile } from "../config/index.js";
import { defaultDbPath, type ToolHost } from "../core/index.js";
import { createProvider } from "../llm/index.js";
import type { ModelProvider } from "../llm/types.js";
import { MultiMCP } from "../mcp_servers/index.js";
import { SessionStore } from "../memory/index.js";

export interface GlobalOptions {
  config?: string;
  db?: string;
  model?: string;
  profile?: string;
  verbose?: boolean;
}

export function globalOptions(cmd: Command): GlobalOptions {
  return cmd.optsWithGlobals() as GlobalOptions;
}

export function dbPath(opts: GlobalOptions): string {
  return opts.db ?? process.env.PDA_DB ?? defaultDbPath();
}

export function openStore(opts: GlobalOptions): SessionStore {
  return SessionStore.open(dbPath(opts));
}

export async function openHub(opts: GlobalOptions): Promise<MultiMCP> {
  return MultiMCP.start(join(configDir(opts.config), "mcp_server_config.yaml"));
}

export interface Runtime {
  profile: Profile;
  profileName: string;
  store: SessionStore;
  hub: MultiMCP;
  models: { perception: ModelProvider; decision: ModelProvider };
  loop(extra?: Partial<LoopDeps>): AgentLoop;
  close(): Promise<void>;
}

export async function openRuntime(opts: GlobalOptions): Promise<Runtime> {
  const dir = configDir(opts.config);
  const { name, profile } = loadProfile(dir, opts.profile);
  // Models first: a missing key should fail before any server is spawned.
  const models = createModels(opts.model);
  const store = openStore(opts);
  let hub: MultiMCP;
  try {
    hub = await openHub(opts);
  } catch (e) {
    store.close();
    throw e;
  }
  const base = (): LoopDeps => ({
    models,
    host: hub as ToolHost,
    recorder: store,
    profile,
    memory: storeMemory(store, profile.memory_hits),
  });
  return {
    profile,
    profileName: name,
    store,
    hub,
    models,
    loop: (extra) => new AgentLoop({ ...base(), ...extra }),
    async close() {
      await hub.close();
      store.close();
    },
  };
}

function createModels(spec: string | undefined): Runtime["models"] {
  // One provider serves both roles (a scripted file holds both roles' turns).
  const provider = createProvider(spec);
  return { perception: provider, decision: provider };
}
