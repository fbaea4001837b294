/** The robot as a real MCP server over stdio, through the real hub: tools, results, images, errors, flags. */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT, ToolError } from "../../../core/index.js";
import { MultiMCP } from "../../index.js";
import { gone } from "../../hub/tests/helpers.js";
import { runExpert, type MotionResult, type Observation, type RobotApi } from "../index.js";
// Not through index.ts: the built server.js is a bundle (mcp_servers/bundle.ts), run as a process, not imported.
import { serverOptions } from "../server.js";

const SERVER = join(PACKAGE_ROOT, "dist/mcp_servers/robot/server.js");
const TOOLS = [
  "check_task_completion",
  "close_gripper",
  "detect_object",
  "execute_trajectory",
  "finish",
  "get_image",
  "get_observation",
  "list_tasks",
  "move_to",
  "open_gripper",
  "reset",
];

let hub: MultiMCP;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pda-robot-"));
  hub = await MultiMCP.start({
    servers: [
      { id: "robot", command: process.execPath, args: [SERVER] },
      {
        id: "blind",
        command: process.execPath,
        args: [SERVER, "--no-check", "--feedback", "state", "--report", join(dir, "episodes.jsonl")],
      },
    ],
  });
});
afterAll(async () => {
  const pids = hub.status().map((s) => s.pid);
  await hub.close();
  expect(await gone(pids)).toEqual([]);
  rmSync(dir, { recursive: true, force: true });
});

/** The expert's robot interface over MCP tool calls. */
function hubApi(server: string): RobotApi {
  const call = (tool: string, args: Record<string, unknown>) => hub.call(`${server}.${tool}`, args);
  return {
    observe: async () => (await call("get_observation", { format: "json" })) as Observation,
    moveTo: async (x, y, z, yaw) => (await call("move_to", { x, y, z, yaw })) as MotionResult,
    open: async (width) => (await call("open_gripper", width === undefined ? {} : { width })) as MotionResult,
    close: async () => (await call("close_gripper", {})) as MotionResult,
    finish: (claimed_success, reason) => call("finish", { claimed_success, reason }),
  };
}

async function failure(tool: string, args: Record<string, unknown>): Promise<ToolError> {
  const e = await hub.call(tool, args).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ToolError);
  return e as ToolError;
}

describe("robot MCP server", () => {
  it("offers exactly the issue's tools, each described", () => {
    const tools = hub.tools().filter((t) => t.server === "robot");
    expect(tools.map((t) => t.name).sort()).toEqual(TOOLS);
    for (const t of tools) expect(t.description.length).toBeGreaterThan(30);
    expect(tools.find((t) => t.name === "move_to")!.description).toMatch(/x to the right, y away .* z up/);
  });

  it("carries honest annotations: reads are safe to repeat after a crash, moves are not", () => {
    const safe = Object.fromEntries(hub.tools().map((t) => [t.name, t.safeToRepeat === true]));
    expect(safe).toEqual({
      list_tasks: true,
      get_observation: true,
      detect_object: true,
      get_image: true,
      check_task_completion: true,
      reset: false,
      move_to: false,
      execute_trajectory: false,
      open_gripper: false,
      close_gripper: false,
      finish: false,
    });
  });

  it("says what to do when used before a reset, and names unknown tasks and objects", async () => {
    expect((await failure("robot.get_observation", {})).message).toMatch(
      /NO_EPISODE: .*call reset\(task, seed\) first/,
    );
    expect((await failure("robot.reset", { task: "juggle", seed: 0 })).message).toMatch(
      /UNKNOWN_TASK: .*stack_blocks/,
    );
    await hub.call("robot.reset", { task: "rubbish_in_bin", seed: 0 });
    expect((await failure("robot.detect_object", { name: "banana" })).message).toMatch(
      /objects: bin, rubbish, tomato_1/,
    );
  });

  it("the expert solves episodes through the tools; finish reports success", async () => {
    const tasks = (await hub.call("robot.list_tasks", {})) as { tasks: { name: string }[] };
    expect(tasks.tasks.map((t) => t.name)).toHaveLength(6);
    for (const [task, seed] of [
      ["put_block_in_target", 2],
      ["stack_blocks", 5],
    ] as const) {
      const reset = (await hub.call("robot.reset", { task, seed })) as {
        instruction: string;
        goal: Record<string, string>;
      };
      expect(reset.instruction.length).toBeGreaterThan(10);
      let finished: unknown;
      await runExpert(
        "expert",
        { ...hubApi("robot"), finish: async (c, r) => (finished = await hubApi("robot").finish(c, r)) },
        task,
        reset.goal,
      );
      expect(finished).toMatchObject({ finished: true, claimed_success: true, success: true });
      expect(((await hub.call("robot.check_task_completion", {})) as { success: boolean }).success).toBe(
        true,
      );
    }
    const text = await hub.call("robot.get_observation", { format: "text" });
    expect(text).toMatch(/^task: stack_blocks — "stack 4 blue blocks in the stack zone"/);
    expect(text).toMatch(/blue_block_\d \(blue block\): .* on blue_block_\d/);
  });

  it("returns a PNG of the requested width", async () => {
    await hub.call("robot.reset", { task: "meat_off_grill", seed: 1 });
    const content = (await hub.call("robot.get_image", { view: "top", size: 300 })) as {
      type: string;
      data: string;
      mimeType: string;
    }[];
    expect(content[0]).toMatchObject({ type: "image", mimeType: "image/png" });
    const png = PNG.sync.read(Buffer.from(content[0]!.data, "base64"));
    expect(png.width).toBe(300);
    expect(png.height).toBeGreaterThan(200);
  });

  it("run settings from flags: no check, state-only feedback, and a report line per episode", async () => {
    await hub.call("blind.reset", { task: "close_jar", seed: 4 });
    expect((await failure("blind.check_task_completion", {})).message).toMatch(/CHECK_DISABLED/);
    const moved = (await hub.call("blind.move_to", { x: 0, y: 0, z: 0.2 })) as MotionResult;
    expect(moved).toMatchObject({
      ok: null,
      error_code: null,
      holding: null,
      gripper: { position: [0, 0, 0.2] },
    });
    expect(await hub.call("blind.finish", { claimed_success: true, reason: "hope" })).toEqual({
      finished: true,
      claimed_success: true,
      reason: "hope",
    });
    const lines = readFileSync(join(dir, "episodes.jsonl"), "utf8").trim().split("\n");
    expect(JSON.parse(lines[lines.length - 1]!)).toMatchObject({
      task: "close_jar",
      seed: 4,
      success: false,
      claimed_success: true,
      finished: true,
      actions: 1,
    });
  });
});

describe("server options", () => {
  it("parses flags and environment; bad values name the flag", () => {
    expect(serverOptions(["--failures", "on", "--feedback", "silent", "--no-check"]).settings).toMatchObject({
      feedback: "silent",
      allow_check: false,
      failures: { collision_push: true },
    });
    expect(
      serverOptions([], { PDA_ROBOT_FAILURES: '{"slip_per_metre": 0.5}' }).settings.failures.slip_per_metre,
    ).toBe(0.5);
    expect(() => serverOptions(["--feedback", "loud"])).toThrow(
      /--feedback must be verbose, state or silent/,
    );
    expect(() => serverOptions(["--failures", '{"placement_noise": -1}'])).toThrow(
      /failures: placement_noise/,
    );
    expect(() => serverOptions(["--max-actions", "0"])).toThrow(/--max-actions/);
  });

  it("the server process exits 2 with the message on a bad flag", () => {
    const r = spawnSync(process.execPath, [SERVER, "--feedback", "loud"], {
      encoding: "utf8",
      timeout: 20_000,
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/pda-robot: --feedback must be/);
  });
});
