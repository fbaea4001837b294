/**
 * `pda robot tasks | render | bench`: the tabletop simulator from the command line. The bench runs episodes
 * with a scripted expert in-process, or with the agent loop (`--model`) driving the robot MCP server from
 * CODE steps, and prints and writes a per-task success table.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import chalk from "chalk";
import type { Command } from "commander";
import { ConfigError } from "../../core/index.js";
import {
  EXPERTS,
  RobotEnv,
  RobotError,
  TASKS,
  VIEWS,
  envApi,
  expertRunner,
  parseFailures,
  parseSeeds,
  parseTasks,
  runEpisodes,
  runExpert,
  successTable,
  tableMarkdown,
  type EpisodeResult,
  type EpisodeRunner,
  type ExpertKind,
  type Feedback,
  type TaskRow,
  type View,
} from "../../mcp_servers/robot/index.js";
import { runCommand } from "../context.js";

/** Robot-side misuse (unknown task, bad seeds) is a usage error: exit 2 with the message. */
function usage<T>(body: () => T): T {
  try {
    return body();
  } catch (e) {
    if (e instanceof RobotError) throw new ConfigError(e.message);
    throw e;
  }
}

function printTable(rows: TaskRow[]): string {
  const header = [
    "task",
    "success",
    "n",
    "steps",
    "actions",
    "tool calls",
    "tokens",
    "false claims",
    "failure codes",
  ];
  const body = rows.map((r) => [
    r.task,
    r.success_rate.toFixed(2),
    String(r.episodes),
    String(r.mean_steps),
    String(r.mean_actions),
    String(r.mean_tool_calls),
    String(r.mean_tokens),
    String(r.false_claims),
    Object.entries(r.codes)
      .map(([c, k]) => `${c}:${k}`)
      .join(" ") + (r.errors ? ` errors:${r.errors}` : ""),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 || i === 8 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [chalk.bold(line(header)), ...body.map(line)].join("\n");
}

interface BenchOptions {
  tasks?: string;
  seeds: string;
  model?: string;
  policy?: string;
  failures: string;
  feedback: string;
  check: boolean;
  json?: boolean;
  out: string;
  maxActions?: string;
}

export function register(program: Command): void {
  const robot = program.command("robot").description("the tabletop robot simulator: tasks, bench, render");
  addTasks(robot);
  addRender(robot);
  addBench(robot);
}

/** `pda robot tasks`: the task list. */
function addTasks(robot: Command): void {
  robot
    .command("tasks")
    .description("list the tasks with their variations")
    .option("--json", "print as JSON")
    .action((opts: { json?: boolean }) =>
      runCommand(async () => {
        const list = TASKS.map((t) => ({
          name: t.name,
          description: t.description,
          variations: Array.from({ length: t.variations }, (_, v) => t.describeVariation(v)),
        }));
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
          return;
        }
        for (const t of list) {
          process.stdout.write(`${chalk.bold(t.name)}  ${t.description}\n`);
          process.stdout.write(
            chalk.dim(`  ${t.variations.length} variations: ${t.variations.join(", ")}\n`),
          );
        }
      }),
    );
}

/** `pda robot render`: one scene drawn as a PNG. */
function addRender(robot: Command): void {
  robot
    .command("render")
    .description("draw a task's scene as a PNG (top-down map, or --view front)")
    .requiredOption("--task <name>", "task name (see pda robot tasks)")
    .requiredOption("--seed <n>", "layout seed")
    .option("--variation <n>", "variation index (default: picked by the seed)")
    .option("--view <view>", `${VIEWS.join(" or ")}`, "top")
    .option("--size <px>", "image width in pixels", "768")
    .option(
      "--solve <policy>",
      `run an expert first (${EXPERTS.join(", ")}) and draw the end state with its path`,
    )
    .option("--out <file>", "PNG file to write (default: <task>-<seed>.png)")
    .option("--json", "print the file and the scene as JSON (errors as JSON too)")
    .action((opts: RenderOptions) => runCommand(() => renderScene(opts)));
}

interface RenderOptions {
  task: string;
  seed: string;
  variation?: string;
  view: string;
  size: string;
  solve?: string;
  out?: string;
  json?: boolean;
}

async function renderScene(opts: RenderOptions): Promise<void> {
  if (!/^\d+$/.test(opts.seed.trim()))
    throw new ConfigError(`--seed must be one whole number ≥ 0, got ${opts.seed}`);
  const seed = Number(opts.seed);
  if (!VIEWS.includes(opts.view as View))
    throw new ConfigError(`--view must be ${VIEWS.join(" or ")}, got ${opts.view}`);
  const size = Number(opts.size);
  if (!Number.isInteger(size) || size < 128 || size > 2048)
    throw new ConfigError(`--size must be 128..2048, got ${opts.size}`);
  if (opts.solve && !EXPERTS.includes(opts.solve as ExpertKind))
    throw new ConfigError(`--solve must be ${EXPERTS.join(" or ")}`);
  const variation = opts.variation === undefined ? undefined : Number(opts.variation);
  const env = await RobotEnv.create();
  try {
    const reset = usage(() => env.reset(opts.task, seed, variation));
    if (opts.solve) {
      const api = { ...envApi(env), finish: async () => undefined };
      await runExpert(opts.solve as ExpertKind, api, reset.task, reset.goal);
    }
    const out = resolve(opts.out ?? `${reset.task}-${reset.seed}.png`);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, env.image(opts.view as View, size));
    const solved = opts.solve ? env.checkTaskCompletion().success : undefined;
    if (opts.json) {
      const { task, seed, variation, instruction } = reset;
      const scene = { file: out, task, seed, variation, instruction, view: opts.view, size };
      process.stdout.write(`${JSON.stringify({ ...scene, solve: opts.solve, solved }, null, 2)}\n`);
      return;
    }
    const done = opts.solve ? `, after ${opts.solve}: ${solved ? "solved" : "not solved"}` : "";
    process.stdout.write(
      `${out}  (${reset.task} seed ${reset.seed} variation ${reset.variation}: "${reset.instruction}"${done})\n`,
    );
  } finally {
    env.close();
  }
}

/** `pda robot bench`: episodes run and scored per task. */
function addBench(robot: Command): void {
  robot
    .command("bench")
    .description("run episodes and print a per-task success table (like MALMM's Table I)")
    .option("--tasks <a,b>", "tasks to run (default: all)")
    .option("--seeds <N|A-B|a,b>", "seeds: N means 0..N-1", "25")
    .option(
      "--policy <name>",
      `a scripted policy: ${EXPERTS.join(", ")} (default: expert, or the agent with --model)`,
    )
    .option("--model <spec>", "run the agent loop with this model instead of an expert (provider[:model])")
    .option(
      "--profile <name>",
      "agent budgets from config/profiles.yaml (with --model; default: robot if defined)",
    )
    .option("--failures <mode>", 'failure modes: "on", "off" or a JSON object of settings', "off")
    .option("--feedback <mode>", "what motion tools report: verbose, state or silent", "verbose")
    .option("--no-check", "disable check_task_completion for the policy")
    .option("--max-actions <n>", "robot actions per episode before STEP_LIMIT")
    .option("--json", "print the table as JSON")
    .option("--out <dir>", "where to write table.md, table.json and episodes.jsonl", "robot-bench")
    .action((opts: BenchOptions, cmd: Command) => runCommand(() => runBench(opts, cmd)));
}

/** The bench's options checked: tasks, seeds, the policy and the robot's settings; usage errors exit 2. */
function benchPlan(opts: BenchOptions) {
  const tasks = usage(() => parseTasks(opts.tasks));
  const seeds = usage(() => parseSeeds(opts.seeds));
  const failures = usage(() => parseFailures(opts.failures));
  if (!["verbose", "state", "silent"].includes(opts.feedback)) {
    throw new ConfigError(`--feedback must be verbose, state or silent, got ${opts.feedback}`);
  }
  const maxActions = opts.maxActions === undefined ? undefined : Number(opts.maxActions);
  if (maxActions !== undefined && (!Number.isInteger(maxActions) || maxActions < 1)) {
    throw new ConfigError(`--max-actions must be a whole number ≥ 1, got ${opts.maxActions}`);
  }
  if (opts.model && opts.policy)
    throw new ConfigError("give --model (the agent) or --policy (an expert), not both");
  const policy = opts.model ? `agent:${opts.model}` : (opts.policy ?? "expert");
  if (!opts.model && !EXPERTS.includes(policy as ExpertKind)) {
    throw new ConfigError(`--policy must be ${EXPERTS.join(" or ")}, got ${policy}`);
  }
  const settings = {
    failures,
    feedback: opts.feedback as Feedback,
    allow_check: opts.check,
    ...(maxActions ? { max_actions: maxActions } : {}),
  };
  return { tasks, seeds, policy, settings };
}

type Plan = ReturnType<typeof benchPlan>;

/** Who acts in the episodes: the agent loop (with --model) or a scripted expert. */
async function benchRunner(
  opts: BenchOptions,
  cmd: Command,
  plan: Plan,
): Promise<{ run: EpisodeRunner; close: () => void | Promise<void> }> {
  if (!opts.model) return expertRunner(plan.policy as ExpertKind, plan.settings);
  // The agent loop, models and hub load only for an agent bench, not for `robot tasks` or the expert.
  const [{ agentRunner }, { globalOptions }] = await Promise.all([
    import("../robot-agent.js"),
    import("../runtime.js"),
  ]);
  return agentRunner(globalOptions(cmd), opts.model, plan.settings, opts.out);
}

/** Every episode, with a progress bar on a terminal's stderr. */
async function playEpisodes(
  plan: Plan,
  runner: { run: EpisodeRunner; close: () => void | Promise<void> },
): Promise<EpisodeResult[]> {
  const bar = process.stderr.isTTY
    ? new (await import("cli-progress")).SingleBar({
        format: "{bar} {value}/{total} episodes  {task} seed {seed}  successes {ok}",
        hideCursor: true,
      })
    : undefined;
  bar?.start(plan.tasks.length * plan.seeds.length, 0, { task: "", seed: "", ok: 0 });
  let ok = 0;
  try {
    return await runEpisodes(plan.tasks, plan.seeds, runner.run, (r, done) => {
      if (r.success) ok++;
      bar?.update(done, { task: r.task, seed: r.seed, ok });
    });
  } finally {
    bar?.stop();
    await runner.close();
  }
}

async function runBench(opts: BenchOptions, cmd: Command): Promise<void> {
  const plan = benchPlan(opts);
  const runner = await benchRunner(opts, cmd, plan);
  const t0 = performance.now();
  const results = await playEpisodes(plan, runner);
  const seconds = (performance.now() - t0) / 1000;
  const rows = successTable(results);
  const title = `${plan.policy}, failures ${opts.failures}, feedback ${opts.feedback}${opts.check ? "" : ", no check"}, seeds ${opts.seeds}`;
  const out = resolve(opts.out);
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, "table.md"), `${tableMarkdown(rows, title)}\n`);
  writeFileSync(join(out, "table.json"), `${JSON.stringify({ title, seconds, rows }, null, 2)}\n`);
  writeFileSync(join(out, "episodes.jsonl"), results.map((r) => JSON.stringify(r)).join("\n") + "\n");
  if (opts.json) {
    process.stdout.write(
      `${JSON.stringify({ title, seconds: Math.round(seconds * 10) / 10, rows }, null, 2)}\n`,
    );
    return;
  }
  process.stdout.write(`${chalk.bold(title)}\n${printTable(rows)}\n`);
  process.stdout.write(
    chalk.dim(`${results.length} episodes in ${seconds.toFixed(1)} s; written to ${out}\n`),
  );
}
