/**
 * A loop under test: the real math MCP server over stdio, a real SQLite store in a temp dir, and a scripted
 * model whose turns are asserted (none left over, none unexpected).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Profile } from "../../config/index.js";
import { DEFAULT_CONFIG_DIR, type PerceptionSnapshot } from "../../core/index.js";
import { ScriptedTransport, StructuredProvider, type ModelPrice, type Script } from "../../llm/index.js";
import { MultiMCP } from "../../mcp_servers/index.js";
import { SessionStore } from "../../memory/index.js";
import { AgentLoop, type LoopDeps } from "../kernel/index.js";

export interface Harness {
  hub: MultiMCP;
  store: SessionStore;
  dir: string;
  loop(
    script: Script,
    profile?: Partial<Profile>,
    extra?: Partial<LoopDeps>,
    /** A price for the scripted model, so the session spends money. */
    price?: ModelPrice,
  ): { loop: AgentLoop; transport: ScriptedTransport };
  close(): Promise<void>;
}

export async function startHarness(): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), "pda-loop-"));
  const hub = await MultiMCP.start({
    servers: [
      {
        id: "math",
        command: process.execPath,
        args: [join(DEFAULT_CONFIG_DIR, "../dist/mcp_servers/math/server.js")],
      },
    ],
  });
  const store = SessionStore.open(join(dir, "pda.db"));
  return {
    hub,
    store,
    dir,
    loop(script, profile = {}, extra = {}, price) {
      const transport = new ScriptedTransport(script);
      const model = new StructuredProvider(transport, { costs: price ? { [transport.model]: price } : {} });
      const loop = new AgentLoop({
        models: { perception: model, decision: model },
        host: hub,
        recorder: store,
        profile: Profile.parse(profile),
        ...extra,
      });
      return { loop, transport };
    },
    async close() {
      await hub.close();
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A perception snapshot with sensible defaults. */
export function snap(over: Partial<PerceptionSnapshot> = {}): PerceptionSnapshot {
  return {
    entities: [],
    result_requirement: "the number asked for",
    original_goal_achieved: false,
    reasoning: "not yet",
    local_goal_achieved: false,
    local_reasoning: "not yet",
    last_tooluse_summary: "none",
    solution_summary: "not ready yet",
    confidence: 0.5,
    ...over,
  };
}

export const achieved = (answer: string) =>
  snap({
    original_goal_achieved: true,
    local_goal_achieved: true,
    solution_summary: answer,
    reasoning: "done",
    confidence: 0.9,
  });
export const stepOk = () => snap({ local_goal_achieved: true, local_reasoning: "the step worked" });

export function code(planText: string[], stepIndex: number, source: string, description = "compute") {
  return { plan_text: planText, step_index: stepIndex, description, type: "CODE", code: source };
}
