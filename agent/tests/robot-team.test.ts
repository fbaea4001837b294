/**
 * The shipped robot-team profile on the real simulator: the orchestrator calls approach, pick and place — each a
 * narrow agent over its own robot tools — with scripted models, and the server's own episode record says
 * whether the block ended in the target zone.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadProfile } from "../../config/index.js";
import { DEFAULT_CONFIG_DIR, PACKAGE_ROOT } from "../../core/index.js";
import { ScriptedTransport, StructuredProvider } from "../../llm/index.js";
import { MultiMCP } from "../../mcp_servers/index.js";
import { SessionStore } from "../../memory/index.js";
import { type LoopEvent } from "../kernel/index.js";
import { AgentTeam, loadAgentsConfig, toolAllowed } from "../team/index.js";
import { robotTeamScript, type Obj } from "./robot-script.js";

const SERVER = join(PACKAGE_ROOT, "dist/mcp_servers/robot/server.js");

let hub: MultiMCP;
let store: SessionStore;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pda-robot-team-"));
  hub = await MultiMCP.start({
    servers: [
      {
        id: "robot",
        command: process.execPath,
        args: [SERVER, "--report", join(dir, "episodes.jsonl")],
        timeout_ms: 60_000,
      },
    ],
  });
  store = SessionStore.open(join(dir, "pda.db"));
});
afterAll(async () => {
  await hub.close();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("robot-team profile", () => {
  it("completes put_block_in_target on the simulator through sub-agents whose tool sets are disjoint", async () => {
    const config = loadAgentsConfig(DEFAULT_CONFIG_DIR);
    const { profile } = loadProfile(DEFAULT_CONFIG_DIR, "robot-team");
    expect(profile.agent).toBe("orchestrator");

    // Disjoint tool sets, as the hub resolves the allowlists.
    const toolsOf = (name: string) =>
      hub
        .tools()
        .filter((t) => toolAllowed(config.agents[name]!.tools, t))
        .map((t) => t.qualified);
    const sets = ["orchestrator", "approach", "pick", "place"].map((n) => [n, toolsOf(n)] as const);
    for (const [n, tools] of sets) expect(tools.length, n).toBeGreaterThan(0);
    const all = sets.flatMap(([, t]) => t);
    expect(new Set(all).size).toBe(all.length);

    const reset = (await hub.call("robot.reset", { task: "put_block_in_target", seed: 11 })) as {
      instruction: string;
      goal: { block: string };
      observation: { objects: Obj[] };
    };
    const block = reset.observation.objects.find((o) => o.name === reset.goal.block)!;
    const transport = new ScriptedTransport(robotTeamScript(block));
    const model = new StructuredProvider(transport);
    const events: LoopEvent[] = [];
    const team = new AgentTeam({ config });
    const loop = team.loop("orchestrator", {
      models: { perception: model, decision: model },
      host: hub,
      recorder: store,
      profile,
      onEvent: (e) => events.push(e),
    });
    const s = await loop.run(`${reset.instruction} (task put_block_in_target; the episode is already reset)`);
    expect([s.status, s.status_reason]).toEqual(["succeeded", undefined]);
    expect(transport.unconsumed()).toEqual({});
    expect(s.steps[0]!.execution_result!.value).toEqual({
      approach: "NONE",
      pick: "NONE",
      carry: "NONE",
      place: "NONE",
    });

    // The simulator's own record, not the agents' word.
    const records = readFileSync(join(dir, "episodes.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(records.at(-1)).toMatchObject({
      task: "put_block_in_target",
      seed: 11,
      success: true,
      claimed_success: true,
      finished: true,
    });

    // Every sub-agent session is linked, reported, and called only its own tools.
    const children = store.childSessions(s.session_id);
    expect(children.map((c) => [c.agent, c.status])).toEqual([
      ["approach", "succeeded"],
      ["pick", "succeeded"],
      ["approach", "succeeded"],
      ["place", "succeeded"],
    ]);
    for (const c of children) {
      const allowed = toolsOf(c.agent!);
      const used = store.toolCalls({ session_id: c.session_id }).map((t) => `${t.server}.${t.tool}`);
      expect(used.length, c.agent!).toBeGreaterThan(0);
      for (const t of used) expect(allowed, `${c.agent} used ${t}`).toContain(t);
      expect(store.getSession(c.session_id).report?.error_code).toBe("NONE");
    }
    // The orchestrator moved nothing itself.
    expect(store.toolCalls({ session_id: s.session_id }).map((t) => t.tool)).toEqual([
      "get_observation",
      "finish",
    ]);
    // Each model saw only its agent's tools.
    const system = (role: string) => transport.calls.find((c) => c.role === role)!.system;
    expect(system("pick.decision")).toMatch(/execute_trajectory\(/);
    expect(system("pick.decision")).not.toMatch(/move_to\(/);
    expect(system("decision")).toMatch(/agents\.pick\(\{task, \.\.\.\}\)/);
    expect(system("decision")).toMatch(/PICK_SEG_MISSED → the grasp closed on nothing/);
    expect(system("decision")).not.toMatch(/move_to\(x: number/);
    expect(events.filter((e) => e.type === "agent_end").map((e) => (e as { agent: string }).agent)).toEqual([
      "approach",
      "pick",
      "approach",
      "place",
    ]);
  });
});
