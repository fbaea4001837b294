/**
 * `pda robot …` and `pda call robot.*` as child processes: tables, files, images, exit codes, and an agent
 * episode — the real loop with a scripted model driving the robot server from CODE steps.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PNG } from "pngjs";
import { afterAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../../core/index.js";

const MAIN = join(PACKAGE_ROOT, "dist/main.js");
const SCRIPT = join(PACKAGE_ROOT, "mcp_servers/robot/tests/fixtures/put_block.script.yaml");
const dir = mkdtempSync(join(tmpdir(), "pda-robot-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs pda asynchronously (so the two test files' children can overlap), bounded by a timeout. */
function pda(...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, "--db", join(dir, "pda.db"), ...args], {
      env: { ...process.env, NO_COLOR: "1" },
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`pda ${args.join(" ")} timed out\n${err}`));
    }, 90_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

describe("pda robot", () => {
  it("tasks --json lists the six tasks with their variations", async () => {
    const r = await pda("robot", "tasks", "--json");
    expect(r.code).toBe(0);
    const tasks = JSON.parse(r.out) as { name: string; variations: string[] }[];
    expect(tasks.map((t) => t.name)).toEqual([
      "put_block_in_target",
      "stack_blocks",
      "empty_container",
      "close_jar",
      "rubbish_in_bin",
      "meat_off_grill",
    ]);
    expect(tasks[1]!.variations).toContain("4 white blocks");
  });

  it("render writes a PNG of the scene (optionally after an expert)", async () => {
    const out = join(dir, "jar.png");
    const r = await pda(
      "robot",
      "render",
      "--task",
      "close_jar",
      "--seed",
      "3",
      "--size",
      "400",
      "--solve",
      "expert",
      "--out",
      out,
    );
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/close_jar seed 3 variation 3: "close the orange jar", after expert: solved/);
    expect(PNG.sync.read(readFileSync(out)).width).toBe(400);
  });

  it("bench --json: the expert's table, and the files written", async () => {
    const out = join(dir, "bench");
    const r = await pda(
      "robot",
      "bench",
      "--tasks",
      "put_block_in_target,meat_off_grill",
      "--seeds",
      "0-2",
      "--json",
      "--out",
      out,
    );
    expect(r.code).toBe(0);
    const table = JSON.parse(r.out) as { rows: { task: string; success_rate: number; episodes: number }[] };
    expect(table.rows.map((row) => [row.task, row.success_rate, row.episodes])).toEqual([
      ["put_block_in_target", 1, 3],
      ["meat_off_grill", 1, 3],
      ["average", 1, 6],
    ]);
    expect(readFileSync(join(out, "table.md"), "utf8")).toMatch(/\| put_block_in_target \| 1\.00 \| 3 \|/);
    expect(readFileSync(join(out, "episodes.jsonl"), "utf8").trim().split("\n")).toHaveLength(6);
  });

  it("bench --model: the agent loop with a scripted model solves an episode through MCP from a CODE step", async () => {
    const out = join(dir, "agent");
    const r = await pda(
      "robot",
      "bench",
      "--model",
      `scripted:${SCRIPT}`,
      "--tasks",
      "put_block_in_target",
      "--seeds",
      "6-6",
      "--json",
      "--out",
      out,
    );
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    const episode = JSON.parse(readFileSync(join(out, "episodes.jsonl"), "utf8").trim()) as Record<
      string,
      unknown
    >;
    // Success comes from the server's own record, not from what the agent claimed.
    expect(episode).toMatchObject({
      task: "put_block_in_target",
      seed: 6,
      success: true,
      claimed_success: true,
      finished: true,
    });
    expect(episode.llm_calls).toBe(3);
    expect(episode.tokens as number).toBeGreaterThan(0);
    expect(episode.actions).toBe(9);
    expect(existsSync(join(out, "server-episodes.jsonl"))).toBe(true);
  });

  it("bad usage exits 2 with a message naming the option", async () => {
    const seeds = await pda("robot", "bench", "--seeds", "x");
    expect(seeds.code).toBe(2);
    expect(seeds.err).toMatch(/--seeds must be N, A-B or a,b,c/);
    const task = await pda("robot", "render", "--task", "juggle", "--seed", "1");
    expect(task.code).toBe(2);
    expect(task.err).toMatch(/unknown task "juggle"/);
    const failures = await pda("robot", "bench", "--failures", "sometimes");
    expect(failures.code).toBe(2);
    expect(failures.err).toMatch(/failures must be "on", "off" or a JSON object/);
  });

  it("the robot server is in the default config: pda call robot.list_tasks '{}'", async () => {
    const r = await pda("call", "robot.list_tasks", "{}");
    expect(r.code).toBe(0);
    expect((JSON.parse(r.out) as { tasks: unknown[] }).tasks).toHaveLength(6);
  });
});
