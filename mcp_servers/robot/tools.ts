/**
 * The robot's MCP tools over one RobotEnv (created on the first reset, which loads the physics engine).
 * Motion failures are results ({ok, error_code, ...}), never isError; misuse (unknown task or object,
 * no episode yet, checks disabled) is an isError result with a message saying what to do.
 */
import type { CallToolResult, McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";
import type { RobotEnv } from "./env.js";
import { RobotError } from "./errors.js";
import { GRIPPER, WORKSPACE } from "./gripper.js";
import { VIEWS } from "./render/scene.js";
import { Waypoint, type RunSettings } from "./schemas.js";
import { TASKS } from "./tasks/index.js";

const readOnly = { readOnlyHint: true, openWorldHint: false } as const;
// A move done twice is not the same as once (the gripper goes on from where the first left it).
const acts = {
  readOnlyHint: false,
  idempotentHint: false,
  destructiveHint: false,
  openWorldHint: false,
} as const;

const MOTION_RESULT =
  "Returns {ok, error_code, message, events, holding, gripper}. error_code is one of NONE, UNREACHABLE, " +
  "INVALID_ARGS, COLLISION_TABLE, COLLISION_OBJECT, GRASP_MISSED, GRASP_WIDTH_EXCEEDED, HOLDING_ALREADY, " +
  "HOLDING_NOTHING, OBJECT_DROPPED, OBJECT_TOPPLED, STEP_LIMIT. Depending on the run's feedback setting " +
  "ok/error_code may be null (look with get_observation instead).";

const FRAME =
  "Metres; x to the right, y away from the viewer, z up; table top z = 0; yaw in radians, counter-clockwise " +
  `from +x. Workspace x ${WORKSPACE.x.join("..")}, y ${WORKSPACE.y.join("..")}, z ${WORKSPACE.z[1]} max.`;

function json(value: unknown): CallToolResult {
  return {
    content: [{ type: "text", text: JSON.stringify(value) }],
    structuredContent: value as Record<string, unknown>,
  };
}

function guarded(run: () => CallToolResult): CallToolResult {
  try {
    return run();
  } catch (e) {
    if (e instanceof RobotError)
      return { isError: true, content: [{ type: "text", text: `${e.code}: ${e.message}` }] };
    throw e;
  }
}

/**
 * The simulator the tools drive, kept apart from any one McpServer: in the 2026-07-28 era over HTTP every
 * request gets a server instance of its own, and the episode must outlive it.
 */
export interface RobotState {
  env?: RobotEnv;
  creating?: Promise<RobotEnv>;
}

/**
 * Register the robot tools on `server`; `settings` are this run's failure modes, feedback and limits; `state`
 * is the simulator they drive (a fresh one unless shared).
 */
export function registerRobotTools(
  server: McpServer,
  settings: RunSettings,
  hooks: { onEnv?: (env: RobotEnv) => void } = {},
  state: RobotState = {},
): { env: () => RobotEnv | undefined } {
  const ready = (): RobotEnv => {
    if (!state.env) throw new RobotError("NO_EPISODE", "no episode yet: call reset(task, seed) first");
    return state.env;
  };

  server.registerTool(
    "list_tasks",
    {
      description: "The tabletop tasks this simulator offers, with how many variations each has.",
      inputSchema: z.object({}),
      annotations: readOnly,
    },
    () =>
      json({
        tasks: TASKS.map((t) => ({
          name: t.name,
          description: t.description,
          variations: t.variations,
          example_variation: t.describeVariation(0),
        })),
      }),
  );

  server.registerTool(
    "reset",
    {
      description:
        "Start an episode of a task with a seed (same task, seed and actions give the same outcome). " +
        "Returns {task, seed, variation, instruction, goal, observation}. The variation defaults to one picked by the seed.",
      inputSchema: z.object({
        task: z.string().describe("a task name from list_tasks"),
        seed: z.number().int().min(0).describe("layout seed, an integer ≥ 0"),
        variation: z.number().int().min(0).optional().describe("variation index (colour, count, target)"),
      }),
      annotations: acts,
    },
    async ({ task, seed, variation }) => {
      // The environment (and with it the physics engine) loads on the first reset: a fast start. Calls
      // in parallel share the one load.
      state.creating ??= import("./env.js").then(async ({ RobotEnv }) => {
        const made = await RobotEnv.create(settings);
        hooks.onEnv?.(made);
        return made;
      });
      const e = (state.env = await state.creating);
      return guarded(() => json(e.reset(task, seed, variation)));
    },
  );

  server.registerTool(
    "get_observation",
    {
      description:
        "What the robot sees now: the gripper (position, yaw, opening, holding) and every object's name, type, " +
        "colour, centre, yaw, size, bounding box, upright, what it rests on and what it is in. " +
        `format "json" (default) or "text". ${FRAME}`,
      inputSchema: z.object({
        format: z.enum(["json", "text"]).default("json").describe('"json" or "text"'),
      }),
      annotations: readOnly,
    },
    ({ format }) =>
      guarded(() =>
        format === "text"
          ? { content: [{ type: "text", text: ready().observeText() }] }
          : json(ready().observe()),
      ),
  );

  server.registerTool(
    "detect_object",
    {
      description:
        "One object by name: centre position [x, y, z] (m), yaw (rad), size, bounding box, upright, on, in. " +
        "Fails with the list of names when there is no such object.",
      inputSchema: z.object({ name: z.string().describe("the object's name, e.g. red_block") }),
      annotations: readOnly,
    },
    ({ name }) => guarded(() => json(ready().detect(name))),
  );

  server.registerTool(
    "move_to",
    {
      description:
        "Move the gripper's tool centre point (between the finger pads; the fingertips are " +
        `${GRIPPER.tip} m below it) in a straight line to (x, y, z) with yaw (the fingers close along the ` +
        "gripper's x axis, turned by yaw). It stops at the first contact. " +
        `${FRAME} ${MOTION_RESULT}`,
      inputSchema: z.object({
        x: z.number().describe("metres"),
        y: z.number().describe("metres"),
        z: z.number().describe("metres, height of the tool centre point"),
        yaw: z.number().optional().describe("radians; omit to keep the current yaw"),
      }),
      annotations: acts,
    },
    ({ x, y, z: zz, yaw }) => guarded(() => json(ready().moveTo(x, y, zz, yaw))),
  );

  server.registerTool(
    "execute_trajectory",
    {
      description:
        "Move through up to 50 waypoints in order, each a straight line; a waypoint may open or close the " +
        `gripper on arrival. Stops at the first waypoint that fails; 'completed' counts those done. ${MOTION_RESULT}`,
      inputSchema: z.object({
        waypoints: z.array(Waypoint).describe("[{x, y, z, yaw?, gripper?: 'open'|'close'}, ...]"),
      }),
      annotations: acts,
    },
    ({ waypoints }) => guarded(() => json(ready().executeTrajectory(waypoints))),
  );

  server.registerTool(
    "open_gripper",
    {
      description:
        `Open the fingers to width metres (default and max ${GRIPPER.maxOpening}); a held object is released ` +
        `and falls or settles where it is. ${MOTION_RESULT}`,
      inputSchema: z.object({ width: z.number().optional().describe(`metres, (0, ${GRIPPER.maxOpening}]`) }),
      annotations: acts,
    },
    ({ width }) => guarded(() => json(ready().openGripper(width))),
  );

  server.registerTool(
    "close_gripper",
    {
      description:
        "Close the fingers. An object between the open fingers is grasped (attached) if it is no wider than " +
        "the opening and the pads overlap its sides; grasp at the object's centre for a firm hold. " +
        MOTION_RESULT,
      inputSchema: z.object({}),
      annotations: acts,
    },
    () => guarded(() => json(ready().closeGripper())),
  );

  server.registerTool(
    "get_image",
    {
      description:
        'A PNG picture of the scene: view "top" (map with grid, names and heights, the gripper and its recent ' +
        'path) or "front" (x across, z up). size is the width in pixels.',
      inputSchema: z.object({
        view: z.enum(VIEWS as [string, ...string[]]).default("top"),
        size: z.number().int().min(128).max(2048).default(512),
      }),
      annotations: readOnly,
    },
    ({ view, size }) =>
      guarded(() => ({
        content: [
          {
            type: "image",
            data: ready()
              .image(view as (typeof VIEWS)[number], size)
              .toString("base64"),
            mimeType: "image/png",
          },
        ],
      })),
  );

  server.registerTool(
    "check_task_completion",
    {
      description:
        "Whether the task is done: {success, conditions: [{name, met, detail}]}. Some runs disable it; then " +
        "judge from get_observation.",
      inputSchema: z.object({}),
      annotations: readOnly,
    },
    () => guarded(() => json(ready().checkTaskCompletion())),
  );

  server.registerTool(
    "finish",
    {
      description:
        "End the episode, saying whether you believe the task succeeded and why. Further motion needs a new reset.",
      inputSchema: z.object({
        claimed_success: z.boolean().describe("true if you believe the task is done"),
        reason: z.string().describe("one sentence: why"),
      }),
      annotations: acts,
    },
    ({ claimed_success, reason }) => guarded(() => json(ready().finish(claimed_success, reason))),
  );

  return { env: () => state.env };
}
