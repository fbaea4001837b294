/**
 * The agent policy for `pda robot bench --model …`: the real agent loop drives the robot MCP server (spawned
 * with the run's failure, feedback and check settings) from CODE steps. The harness resets each episode (a call
 * the session logs as its first), gives the loop the instruction wrapped in the robot prompt
 * (prompts/robot/task.md), closes the episode if the agent did not call finish, and reads the server's own
 * episode record (so success is never self-reported).
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { AgentLoop } from "../agent/index.js";
import { configDir, configFile, loadConfigFile, loadProfile, ProfilesFile } from "../config/index.js";
import { distPath, errorMessage, ToolError, type ToolCallRecord } from "../core/index.js";
import { createChannel } from "../hil/index.js";
import { createModels, loadModelsConfig } from "../llm/index.js";
import { MultiMCP } from "../mcp_servers/index.js";
import {
  GRIPPER,
  WORKSPACE,
  type EpisodeRecord,
  type EpisodeResult,
  type EpisodeRunner,
  type RunSettingsInput,
} from "../mcp_servers/robot/index.js";
import { renderPrompt } from "../prompts/index.js";
import { openStore, type GlobalOptions } from "./runtime.js";

/** The query the agent gets for one episode: the robot conventions, the habits and the instruction. */
export function robotQuery(instruction: string, settings: RunSettingsInput): string {
  const feedback = settings.feedback ?? "verbose";
  return renderPrompt("robot/task", {
    instruction,
    max_opening: String(GRIPPER.maxOpening),
    tip: String(GRIPPER.tip),
    workspace: `x ${WORKSPACE.x.join("..")}, y ${WORKSPACE.y.join("..")}, z up to ${WORKSPACE.z[1]}`,
    feedback:
      feedback === "verbose"
        ? "Motion tools report ok, an error_code and events: read them."
        : "Motion tools do not report what happened (ok and error_code are null): call get_observation after every motion.",
    check:
      settings.allow_check === false
        ? "check_task_completion is disabled: judge success from get_observation."
        : "check_task_completion tells whether the task is done.",
  });
}

function lastRecord(file: string, task: string, seed: number): EpisodeRecord | undefined {
  if (!existsSync(file)) return undefined;
  const lines = readFileSync(file, "utf8").trim().split("\n").filter(Boolean);
  for (let i = lines.length - 1; i >= 0; i--) {
    const r = JSON.parse(lines[i]!) as EpisodeRecord;
    if (r.task === task && r.seed === seed) return r;
  }
  return undefined;
}

export async function agentRunner(
  g: GlobalOptions,
  model: string,
  settings: RunSettingsInput,
  outDir: string,
): Promise<{ run: EpisodeRunner; close: () => Promise<void> }> {
  const dir = configDir(g.config);
  // The robot profile (bigger budgets for many motions) when the config has one, unless --profile says otherwise.
  const known = loadConfigFile(configFile(dir, "profiles.yaml"), ProfilesFile).profiles;
  const { profile } = loadProfile(dir, g.profile ?? (known.robot ? "robot" : undefined));
  const router = createModels({ model, config: loadModelsConfig(dirname(configFile(dir, "models.yaml"))) });
  const human = createChannel("policy:fail", { isTTY: false });
  const report = resolve(join(outDir, "server-episodes.jsonl"));
  mkdirSync(dirname(report), { recursive: true });
  rmSync(report, { force: true });
  const args = [
    distPath("mcp_servers/robot/server.js"),
    "--failures",
    JSON.stringify(settings.failures ?? {}),
    "--feedback",
    settings.feedback ?? "verbose",
    "--report",
    report,
    ...(settings.allow_check === false ? ["--no-check"] : []),
    ...(settings.max_actions ? ["--max-actions", String(settings.max_actions)] : []),
  ];
  const store = openStore(g, profile.redact);
  let hub: MultiMCP;
  try {
    hub = await MultiMCP.start({
      servers: [{ id: "robot", command: process.execPath, args, timeout_ms: 120_000 }],
    });
  } catch (e) {
    store.close();
    await router.close();
    throw e;
  }
  const loop = new AgentLoop({
    models: { perception: router, decision: router },
    host: hub,
    recorder: store,
    journal: store,
    profile,
    human,
  });
  const run: EpisodeRunner = async (task, seed) => {
    const t0 = performance.now();
    const resetArgs = { task, seed };
    let resetCall: ToolCallRecord | undefined;
    const reset = (await hub.call("robot.reset", resetArgs, { onRecord: (r) => (resetCall = r) })) as {
      instruction: string;
    };
    // The reset is the session's too: logged as its first call (arguments and result included), the UI can
    // play the episode from it and draw the scene of each step.
    const priorCalls = resetCall
      ? [{ ...resetCall, args_json: JSON.stringify(resetArgs), result_json: JSON.stringify(reset) }]
      : [];
    let error: string | undefined;
    let note: string | undefined;
    let usage = { llm_calls: 0, tokens: 0, steps: 0 };
    try {
      const session = await loop.run(robotQuery(reset.instruction, settings), {
        agent: "robot-bench",
        priorCalls,
      });
      usage = {
        llm_calls: session.usage.llm_calls,
        tokens: session.usage.tokens,
        steps: session.steps.length,
      };
      if (session.status !== "succeeded") note = `${session.status}: ${session.status_reason ?? ""}`.trim();
    } catch (e) {
      error = errorMessage(e);
    }
    // Close the episode if the agent did not; EPISODE_FINISHED means it did.
    await hub
      .call("robot.finish", { claimed_success: false, reason: "the agent ended without calling finish" })
      .catch((e: unknown) => {
        if (!(e instanceof ToolError)) throw e;
      });
    const record = lastRecord(report, task, seed);
    if (!record)
      throw new Error(`robot server wrote no episode record for ${task} seed ${seed} to ${report}`);
    return {
      ...record,
      policy: `agent:${model}`,
      ...usage,
      duration_ms: performance.now() - t0,
      ...(error ? { error } : {}),
      ...(note ? { note } : {}),
    } satisfies EpisodeResult;
  };
  return {
    run,
    close: async () => {
      await hub.close();
      store.close();
      await router.close();
    },
  };
}
