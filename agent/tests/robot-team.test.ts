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
import { AgentTeam, loadAgentsConfig, toolAllowed, type LoopEvent } from "../index.js";
import { achieved, snap } from "./harness.js";
import { subCode } from "./team.js";

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

interface Obj {
  name: string;
  position: [number, number, number];
  yaw: number;
}

/** What each agent's model writes, given the task it is shown (the object names and poses it is told). */
function script(block: Obj) {
  const [x, y, z] = block.position;
  const name = block.name;
  const orchestrator = `
    const obs = await get_observation({format: "json"});
    const block = obs.instruction.split(" ")[2] + "_block";
    const r = {};
    r.approach = await agents.approach({task: "hover above " + block + " at z 0.2", object: block, z: 0.2});
    if (!r.approach.success) return r;
    const t = r.approach.target;
    r.pick = await agents.pick({task: "grasp " + block + " below the gripper and lift it", object: block,
                                position: t.position, yaw: t.yaw, size: t.size});
    if (!r.pick.success) return r;
    r.carry = await agents.approach({task: "bring the held block just above target_zone", object: "target_zone",
                                     z: t.position[2] + 0.005});
    if (!r.carry.success) return r;
    r.place = await agents.place({task: "release " + block + " into target_zone and check the task"});
    await finish({claimed_success: r.place.success, reason: r.place.reason});
    return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.error_code]));`;
  const approachBlock = `
    const o = await detect_object({name: "${name}"});
    const m = await move_to({x: o.position[0], y: o.position[1], z: 0.2, yaw: o.yaw});
    if (!m.ok) {
      await agent.report({success: false, error_code: m.error_code === "UNREACHABLE" ? "APPROACH_UNREACHABLE" : "APPROACH_COLLISION", reason: m.message});
      return m;
    }
    await agent.report({success: true, error_code: "NONE", reason: "above ${name} at z 0.2", target: o, gripper: m.gripper});
    return m.gripper;`;
  const approachZone = `
    const o = await detect_object({name: "target_zone"});
    const up = await move_to({x: o.position[0], y: o.position[1], z: 0.2});
    const down = up.ok ? await move_to({x: o.position[0], y: o.position[1], z: ${z + 0.005}}) : up;
    if (!down.ok) {
      await agent.report({success: false, error_code: "APPROACH_COLLISION", reason: down.message});
      return down;
    }
    await agent.report({success: true, error_code: "NONE", reason: "just above target_zone", target: o, gripper: down.gripper});
    return down.gripper;`;
  const pick = `
    const [x, y, z, yaw] = [${x}, ${y}, ${z}, ${block.yaw}];
    const t = await execute_trajectory({waypoints: [{x, y, z: 0.2, yaw, gripper: "open"}, {x, y, z, yaw}]});
    if (!t.ok) {
      await agent.report({success: false, error_code: "PICK_PLAN_FAILED", reason: t.message});
      return t;
    }
    const g = await close_gripper({});
    if (g.holding !== "${name}") {
      await agent.report({success: false, error_code: g.error_code === "GRASP_WIDTH_EXCEEDED" ? "PICK_TOO_WIDE" : "PICK_SEG_MISSED", reason: g.message});
      return g;
    }
    const lift = await execute_trajectory({waypoints: [{x, y, z: 0.2}]});
    if (lift.holding !== "${name}") {
      await agent.report({success: false, error_code: "PICK_DROPPED", reason: lift.message});
      return lift;
    }
    await agent.report({success: true, error_code: "NONE", reason: "holding ${name} at z 0.2", holding: "${name}"});
    return lift.gripper;`;
  const place = `
    const r = await open_gripper({});
    if (r.error_code === "HOLDING_NOTHING") {
      await agent.report({success: false, error_code: "PLACE_NOTHING_HELD", reason: r.message});
      return r;
    }
    const c = await check_task_completion({});
    await agent.report(c.success
      ? {success: true, error_code: "NONE", reason: "released; the task check passed", conditions: c.conditions}
      : {success: false, error_code: "PLACE_MISSED_TARGET", reason: "released, but the task check failed", conditions: c.conditions});
    return c;`;
  const plan = ["Step 0: approach, pick, carry and place the block with the helpers, then finish"];
  return {
    perception: [snap(), achieved(`The ${name.replace("_", " ")} is in the target zone.`)],
    decision: [
      {
        plan_text: plan,
        step_index: 0,
        description: "pick and place via the team",
        type: "CODE",
        code: orchestrator,
      },
    ],
    "approach.perception": [snap(), snap()],
    "approach.decision": [
      subCode(approachBlock, "hover above the block"),
      subCode(approachZone, "go above the zone"),
    ],
    "pick.perception": [snap()],
    "pick.decision": [subCode(pick, "grasp and lift")],
    "place.perception": [snap()],
    "place.decision": [subCode(place, "release and check")],
  };
}

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
    const transport = new ScriptedTransport(script(block));
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
