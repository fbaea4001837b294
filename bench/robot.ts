/**
 * Robot simulator speed and success: the plain expert with failure modes off, the retrying expert (and the
 * plain one, for contrast) with them on, over every task and seeds 0..N-1, in-process. Reports simulated
 * physics steps per second and episodes per minute (wall clock and this process's CPU time — the machine
 * is shared), next to a baseline measured in the same run: bare Rapier steps of the same scenes without the
 * gripper's checks, observations or experts. Also the MCP server's start-up and first-reset times. Prints JSON.
 *   node dist/bench/robot.js [--seeds 25] [--skip-failures]
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { distPath } from "../core/index.js";
import {
  FAILURES_ON,
  PhysicsScene,
  RobotEnv,
  TASK_NAMES,
  buildTask,
  envApi,
  getTask,
  loadRapier,
  runExpert,
  variationForSeed,
  type ExpertKind,
  type RunSettingsInput,
} from "../mcp_servers/robot/index.js";

const { values } = parseArgs({
  options: { seeds: { type: "string" }, "skip-failures": { type: "boolean" } },
});
const SEEDS = Number(values.seeds ?? 25);
const r1 = (x: number) => Math.round(x * 10) / 10;
const r3 = (x: number) => Math.round(x * 1000) / 1000;

function cpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

async function episodes(kind: ExpertKind, settings: RunSettingsInput, seeds = SEEDS) {
  const SEEDS = seeds;
  const env = await RobotEnv.create(settings);
  const perTask: Record<string, { success_rate: number; mean_sim_steps: number; mean_actions: number }> = {};
  let steps = 0;
  let n = 0;
  let ok = 0;
  const wall0 = performance.now();
  const cpu0 = cpuSeconds();
  for (const task of TASK_NAMES) {
    let tOk = 0;
    let tSteps = 0;
    let tActions = 0;
    for (let seed = 0; seed < SEEDS; seed++) {
      const r = env.reset(task, seed);
      await runExpert(kind, envApi(env), task, r.goal);
      const rec = env.record();
      tSteps += rec.sim_steps;
      tActions += rec.actions;
      if (rec.success) tOk++;
    }
    perTask[task] = {
      success_rate: r3(tOk / SEEDS),
      mean_sim_steps: Math.round(tSteps / SEEDS),
      mean_actions: r1(tActions / SEEDS),
    };
    steps += tSteps;
    n += SEEDS;
    ok += tOk;
  }
  const wall = (performance.now() - wall0) / 1000;
  const cpu = cpuSeconds() - cpu0;
  env.close();
  return {
    episodes: n,
    success_rate: r3(ok / n),
    sim_steps: steps,
    wall_s: r1(wall),
    cpu_s: r1(cpu),
    sim_steps_per_s: Math.round(steps / wall),
    sim_steps_per_cpu_s: Math.round(steps / cpu),
    episodes_per_min: r1((n / wall) * 60),
    episodes_per_cpu_min: r1((n / cpu) * 60),
    per_task: perTask,
  };
}

/**
 * Bare physics: every scene of the timed run (each task, each seed) stepped as often as its expert episode
 * stepped on average, with nothing else (no gripper checks, observations or expert); bodies settle and
 * sleep as they do in episodes.
 */
async function baseline(meanSteps: Record<string, number>) {
  await loadRapier();
  let steps = 0;
  const wall0 = performance.now();
  const cpu0 = cpuSeconds();
  for (const name of TASK_NAMES) {
    const task = getTask(name);
    for (let seed = 0; seed < SEEDS; seed++) {
      const scene = new PhysicsScene(buildTask(task, seed, variationForSeed(task, seed)).objects);
      for (let i = 0; i < (meanSteps[name] ?? 0); i++) {
        scene.step();
        steps++;
      }
      scene.free();
    }
  }
  const wall = (performance.now() - wall0) / 1000;
  const cpu = cpuSeconds() - cpu0;
  return {
    sim_steps: steps,
    sim_steps_per_s: Math.round(steps / wall),
    sim_steps_per_cpu_s: Math.round(steps / cpu),
  };
}

/** Spawn a server, connect, list tools: start-up time. For the robot also the first reset (loads Rapier). */
async function serverTimes(script: string, reset: boolean) {
  const t0 = performance.now();
  const transport = new StdioClientTransport({ command: process.execPath, args: [distPath(script)] });
  const client = new Client({ name: "bench", version: "0" });
  await client.connect(transport);
  await client.listTools();
  const ready = performance.now();
  const out: Record<string, number> = { start_to_tools_ms: Math.round(ready - t0) };
  if (reset) {
    await client.callTool({ name: "reset", arguments: { task: "stack_blocks", seed: 0 } });
    const first = performance.now();
    await client.callTool({ name: "reset", arguments: { task: "stack_blocks", seed: 1 } });
    out.first_reset_ms = Math.round(first - ready);
    out.second_reset_ms = Math.round(performance.now() - first);
  }
  await client.close();
  return out;
}

const load = loadavg()[0];
const robotServer = await serverTimes("mcp_servers/robot/server.js", true);
const mathServer = await serverTimes("mcp_servers/math/server.js", false);
// Warm up the JIT on a few episodes so the first timed block is not penalised.
await episodes("expert", {}, 3);
const expertOff = await episodes("expert", {});
const base = await baseline(
  Object.fromEntries(Object.entries(expertOff.per_task).map(([t, v]) => [t, v.mean_sim_steps])),
);
const withFailures = values["skip-failures"]
  ? undefined
  : {
      retry_expert: await episodes("retry-expert", { failures: FAILURES_ON }),
      plain_expert: await episodes("expert", { failures: FAILURES_ON }),
    };
process.stdout.write(
  `${JSON.stringify(
    {
      bench: "robot",
      seeds: `0-${SEEDS - 1}`,
      tasks: TASK_NAMES.length,
      load_average_1m: r1(load ?? 0),
      server: {
        robot: robotServer,
        math_baseline: mathServer,
        start_ratio_robot_vs_math: r3(robotServer.start_to_tools_ms! / mathServer.start_to_tools_ms!),
      },
      baseline_bare_physics: base,
      expert_failures_off: expertOff,
      // CPU per simulated step in whole episodes over bare stepping: what checks, observations and the expert cost.
      episode_cost_per_step_vs_bare: r3(base.sim_steps_per_cpu_s / expertOff.sim_steps_per_cpu_s),
      ...(withFailures && { failures_on: withFailures }),
    },
    null,
    2,
  )}\n`,
);
