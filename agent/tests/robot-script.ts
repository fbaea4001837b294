/** The scripted models of a robot-team episode (agent tests and the CLI test share it). */
import { achieved, snap } from "./harness.js";
import { subCode } from "./team.js";

export interface Obj {
  name: string;
  position: [number, number, number];
  yaw: number;
}

/**
 * What each agent's model writes for put_block_in_target, given the task it is shown (the object names and
 * poses it is told). With `reset`, the orchestrator starts the episode itself (as at the command line).
 */
export function robotTeamScript(block: Obj, reset?: { task: string; seed: number }) {
  const [x, y, z] = block.position;
  const name = block.name;
  const start = reset ? `await reset({task: "${reset.task}", seed: ${reset.seed}});` : "";
  const orchestrator = `
    ${start}
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
