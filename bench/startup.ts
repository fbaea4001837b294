/**
 * What starting `pda` costs: CPU (user + system, the process and every child it waited for, as GNU time
 * reports it) and wall time of `pda --version`, `pda --help`, `pda tools` and the scripted calculator demo,
 * each next to its baseline measured in the same round: `node -e 0` for the first two, the plain MCP SDK
 * client doing the same work (bench/startup-minimal.ts) for the others. `tools` and `run` are measured with
 * the bundled config (every server) and with a config holding only the math server; the math-only run also
 * with PDA_SNAPSHOTS=0 (`run_math_from_bundle`: its server started from its bundle, as the minimal script
 * starts it, not from its start-up snapshot, hub/snapshot.ts). The order of the
 * commands alternates between rounds; each figure is the median of its per-round ratios. Also the number of
 * modules each command loads, and optionally how many of N concurrent scripted runs succeed with their tools.
 * Prints JSON.
 *   node dist/bench/startup.js [--rounds 7] [--concurrent 8,16] [--root <package folder>] [--before <folder>]
 * --root measures another build's dist/main.js (e.g. a checkout of an older commit) against this one's
 * baselines; --before adds another build's commands (`<name>_before`) to the same rounds, interleaved with
 * this one's, for a before/after comparison on a machine whose load changes.
 */
import { execFile } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { PACKAGE_ROOT, distPath } from "../core/index.js";
import { loadedModules } from "../testing/modules.js";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "7" },
    concurrent: { type: "string", default: "" },
    root: { type: "string", default: PACKAGE_ROOT },
    before: { type: "string", default: "" },
  },
});
const ROUNDS = Number(values.rounds);
const ROOT = resolve(values.root!);
const MAIN = join(ROOT, "dist", "main.js");
const BEFORE = values.before ? join(resolve(values.before), "dist", "main.js") : undefined;
const DEMO_MODEL = join(PACKAGE_ROOT, "config", "demo", "calculator.yaml");
const DEMO_QUERY = "What is 32 + 5 - 3 * 2";
const MINIMAL = distPath("bench/startup-minimal.js");

const dir = mkdtempSync(join(tmpdir(), "pda-bench-startup-"));
// Only the math server, to tell the hub's other servers apart from the rest of `pda`; the bundled profiles.
const MATH_CONFIG = join(dir, "config");
mkdirSync(MATH_CONFIG);
for (const f of ["profiles.yaml", "models.yaml", "agents.yaml"]) {
  if (existsSync(join(ROOT, "config", f))) copyFileSync(join(ROOT, "config", f), join(MATH_CONFIG, f));
}
writeFileSync(
  join(MATH_CONFIG, "mcp_server_config.yaml"),
  `servers:\n  - id: math\n    command: ${process.execPath}\n    args: [${distPath("mcp_servers/math/server.js")}]\n`,
);
const BUNDLED_CONFIG = join(ROOT, "config");

// A private HOME and data folder, kept across rounds (a documents index built once, as on a used machine).
const env: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: join(dir, "home"),
  XDG_DATA_HOME: join(dir, "home", "data"),
  XDG_CACHE_HOME: join(dir, "home", "cache"),
  XDG_CONFIG_HOME: join(dir, "home", "config"),
  NO_COLOR: "1",
};

interface Cost {
  cpu: number;
  wall: number;
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Run argv under GNU time: CPU of the process and of the children it waited for, and wall time, per run. GNU
 * time counts in hundredths of a second, so a short command runs `reps` times in one measurement.
 */
function measure(argv: string[], reps = 1, extraEnv: NodeJS.ProcessEnv = {}): Promise<Cost> {
  const out = join(dir, `time-${process.hrtime.bigint()}.txt`);
  const loop = 'i=0; while [ $i -lt "$0" ]; do "$@" > /dev/null || exit $?; i=$((i+1)); done';
  const cmd = reps > 1 ? ["sh", "-c", loop, String(reps), ...argv] : argv;
  return new Promise((done) => {
    const child = execFile(
      "/usr/bin/time",
      ["-f", "%U %S %e", "-o", out, ...cmd],
      { env: { ...env, ...extraEnv }, cwd: dir, timeout: 120_000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        const [u, s, e] = readFileSync(out, "utf8").trim().split("\n").at(-1)!.split(" ").map(Number);
        rmSync(out, { force: true });
        done({
          cpu: (u! + s!) / reps,
          wall: e! / reps,
          code: err ? Number((err as { code?: unknown }).code ?? 1) : 0,
          stdout,
          stderr,
        });
      },
    );
    child.stdin?.end();
  });
}

const node = process.execPath;
const db = join(dir, "pda.db");
const pda = (config: string, ...args: string[]) => [node, MAIN, "--config", config, "--db", db, ...args];
const run = (config: string) => pda(config, "run", DEMO_QUERY, "--model", `scripted:${DEMO_MODEL}`, "--json");
/** The same command line with the --before build's main.js, on a store of its own (its schema may be older). */
const before = (argv: string[]) =>
  argv.map((a) => (a === MAIN ? BEFORE! : a === db ? join(dir, "pda-before.db") : a));

const COMMANDS: Record<string, string[]> = {
  node_e0: [node, "-e", "0"],
  version: [node, MAIN, "--version"],
  help: [node, MAIN, "--help"],
  minimal_list: [node, MINIMAL, "list"],
  tools_math: pda(MATH_CONFIG, "tools"),
  tools_bundled: pda(BUNDLED_CONFIG, "tools"),
  minimal_calls: [node, MINIMAL, "calls", DEMO_MODEL],
  run_math: run(MATH_CONFIG),
  // The same run with its server started from its bundle, as the minimal script starts it (no snapshot).
  run_math_from_bundle: run(MATH_CONFIG),
  run_bundled: run(BUNDLED_CONFIG),
};

/** Environment added for a command. */
const ENVS: Record<string, NodeJS.ProcessEnv> = { run_math_from_bundle: { PDA_SNAPSHOTS: "0" } };

/** Runs per measurement of the commands that take a few hundredths of a second. */
const REPS: Record<string, number> = {
  node_e0: 10,
  version: 10,
  help: 10,
  version_before: 10,
  help_before: 10,
};

/** Ratio name → [command, its baseline]. */
const RATIOS: Record<string, [string, string]> = {
  version: ["version", "node_e0"],
  help: ["help", "node_e0"],
  tools_math: ["tools_math", "minimal_list"],
  tools_bundled: ["tools_bundled", "minimal_list"],
  run_math: ["run_math", "minimal_calls"],
  run_math_from_bundle: ["run_math_from_bundle", "minimal_calls"],
  run_bundled: ["run_bundled", "minimal_calls"],
};

if (BEFORE) {
  for (const name of ["version", "help", "run_math", "run_bundled"]) {
    COMMANDS[`${name}_before`] = before(COMMANDS[name]!);
    RATIOS[`${name}_before`] = [`${name}_before`, RATIOS[name]![1]];
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)]! : NaN;
};
const r2 = (x: number) => Math.round(x * 100) / 100;
const r3 = (x: number) => Math.round(x * 1000) / 1000;

async function rounds() {
  const costs: Record<string, Cost[]> = Object.fromEntries(Object.keys(COMMANDS).map((k) => [k, []]));
  const failures: string[] = [];
  const names = Object.keys(COMMANDS);
  // One round unmeasured: the documents index is built, V8's code cache warmed.
  for (const k of names) await measure(COMMANDS[k]!, REPS[k], ENVS[k]);
  for (let r = 0; r < ROUNDS; r++) {
    for (const k of r % 2 ? [...names].reverse() : names) {
      const c = await measure(COMMANDS[k]!, REPS[k], ENVS[k]);
      if (c.code !== 0) failures.push(`${k}: exit ${c.code}`);
      costs[k]!.push(c);
    }
  }
  const commands = Object.fromEntries(
    names.map((k) => [
      k,
      { cpu_s: r3(median(costs[k]!.map((c) => c.cpu))), wall_s: r3(median(costs[k]!.map((c) => c.wall))) },
    ]),
  );
  const ratios = Object.fromEntries(
    Object.entries(RATIOS).map(([name, [a, b]]) => {
      const per = (f: (c: Cost) => number) =>
        r2(median(costs[a]!.map((c, i) => f(c) / Math.max(0.01, f(costs[b]![i]!)))));
      return [name, { baseline: b, cpu: per((c) => c.cpu), wall: per((c) => c.wall) }];
    }),
  );
  return { commands, ratios, failures };
}

async function modules() {
  const count = async (argv: string[]) =>
    (await loadedModules(argv.slice(1), { cwd: dir, env })).modules.length;
  return {
    version: await count(COMMANDS.version!),
    help: await count(COMMANDS.help!),
    tools_math: await count(COMMANDS.tools_math!),
    run_math: await count(COMMANDS.run_math!),
    minimal_calls: await count(COMMANDS.minimal_calls!),
    ...(BEFORE && {
      help_before: await count(COMMANDS.help_before!),
      run_math_before: await count(COMMANDS.run_math_before!),
    }),
  };
}

/** N scripted runs at once on one store: how many finished with their three tool calls. */
async function concurrent(n: number) {
  const started = performance.now();
  const results = await Promise.all(Array.from({ length: n }, () => measure(run(BUNDLED_CONFIG))));
  const ok = results.filter((c) => {
    try {
      const s = JSON.parse(c.stdout) as { status?: string; tool_calls?: number };
      return c.code === 0 && s.status === "succeeded" && s.tool_calls === 3;
    } catch {
      return false;
    }
  }).length;
  // Why the others did not: each distinct last line of stderr (or the status), with how many ended so.
  const why: Record<string, number> = {};
  for (const c of results) {
    let status = "";
    try {
      const s = JSON.parse(c.stdout) as { status?: string; tool_calls?: number };
      status = `status ${s.status}, ${s.tool_calls} tool calls`;
    } catch {
      status = c.stderr.trim().split("\n").at(-1) ?? "";
    }
    why[`exit ${c.code}: ${status}`] = (why[`exit ${c.code}: ${status}`] ?? 0) + 1;
  }
  return {
    runs: n,
    succeeded_with_tools: ok,
    outcomes: why,
    wall_s: r2((performance.now() - started) / 1000),
  };
}

try {
  const measured = await rounds();
  const out = {
    bench: "startup",
    main: MAIN,
    ...(BEFORE && { before: BEFORE }),
    rounds: ROUNDS,
    load_avg_1m: r2(loadavg()[0]!),
    targets: { version_help_cpu_vs_node_e0: 2, run_cpu_vs_minimal: 1.3 },
    ...measured,
    modules: await modules(),
    concurrent: [] as Array<Awaited<ReturnType<typeof concurrent>>>,
  };
  for (const n of values.concurrent ? values.concurrent.split(",").map(Number) : []) {
    out.concurrent.push(await concurrent(n));
  }
  console.log(JSON.stringify(out, null, 2));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
