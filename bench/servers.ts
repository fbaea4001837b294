/**
 * Start-up cost of the bundled MCP servers: each is spawned the way the hub does (command, args, env and cwd
 * from config/mcp_server_config.yaml, the SDK's safe environment; from its start-up snapshot when it has one
 * that fits, hub/snapshot.ts), sent `initialize` over stdio, and measured when it answers: the child's CPU
 * (utime + stime from /proc/<pid>/stat) and the wall time since the spawn. Beside them, in the same run: each
 * server started from its bundle (as without snapshots), and `node -e 0` (its CPU from the waiting shell's
 * cutime + cstime). Prints JSON.
 *   node dist/bench/servers.js [--rounds 7] [--config config/mcp_server_config.yaml]
 * Rounds go server by server in turn, so load on the shared machine hits each alike; figures are medians.
 * Target (#16): each server answers initialize within 0.2 CPU-seconds. Linux only (/proc).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { parseArgs } from "node:util";
import { getDefaultEnvironment } from "@modelcontextprotocol/client/stdio";
import { distPath } from "../core/index.js";
import { loadHubConfig, snapshotLaunch } from "../mcp_servers/index.js";

const { values } = parseArgs({ options: { rounds: { type: "string" }, config: { type: "string" } } });
const ROUNDS = Number(values.rounds ?? 7);
const CONFIG = values.config ?? distPath("../config/mcp_server_config.yaml");
const TARGET_CPU_S = 0.2;
/** USER_HZ: /proc reports times in these ticks, 100 on every Linux. */
const TICKS = 100;

interface Sample {
  cpu_s: number;
  wall_ms: number;
}

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces); field 3 is at index 0. */
function statFields(text: string): string[] {
  return text.slice(text.lastIndexOf(")") + 2).split(" ");
}

function cpuOf(pid: number): number {
  const f = statFields(readFileSync(`/proc/${pid}/stat`, "utf8"));
  return (Number(f[11]) + Number(f[12])) / TICKS; // utime (14), stime (15)
}

const INITIALIZE = `${JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } },
})}\n`;

/** Spawn, send initialize, and sample the child's CPU the moment its answer arrives. */
function measureServer(
  command: string,
  args: string[],
  env: Record<string, string>,
  cwd?: string,
): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child: ChildProcess = spawn(command, args, { env, cwd, stdio: ["pipe", "pipe", "ignore"] });
    let buffered = "";
    const timer = setTimeout(
      () => fail(new Error(`${args.join(" ")}: no answer to initialize in 60 s`)),
      60_000,
    );
    const fail = (e: Error) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(e);
    };
    child.once("error", fail);
    child.once("exit", (code) => fail(new Error(`${args.join(" ")} exited with ${code} before answering`)));
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (text: string) => {
      buffered += text;
      if (!buffered.includes('"id":1')) return;
      const wall_ms = performance.now() - started;
      const cpu_s = cpuOf(child.pid!);
      clearTimeout(timer);
      child.removeAllListeners("exit");
      child.once("exit", () => resolve({ cpu_s, wall_ms }));
      child.stdin!.end(); // the normal way to stop a stdio server
    });
    child.stdin!.write(INITIALIZE);
  });
}

/**
 * `node -e 0`: its CPU is read from the shell that waited for it (cutime + cstime). In the servers' environment:
 * a variable such as NODE_EXTRA_CA_CERTS in this process's would cost every Node start ~0.15 s of CPU.
 */
function measureBareNode(env: Record<string, string>): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const shell = spawn("sh", ["-c", `"$0" -e 0; cat /proc/$$/stat`, process.execPath], {
      env,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    shell.stdout.setEncoding("utf8");
    shell.stdout.on("data", (t: string) => (out += t));
    shell.once("error", reject);
    shell.once("exit", () => {
      const f = statFields(out.trim());
      resolve({ cpu_s: (Number(f[13]) + Number(f[14])) / TICKS, wall_ms: performance.now() - started });
    });
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const r3 = (x: number) => Math.round(x * 1000) / 1000;

const config = loadHubConfig(CONFIG);
const servers = config.servers.filter((s) => s.enabled !== false && s.command);
const baseEnv = getDefaultEnvironment();
const launches = servers.map((s) => {
  const env = { ...baseEnv, ...s.env };
  const bundle = { command: s.command!, args: s.args ?? [] };
  return { id: s.id, env, cwd: s.cwd, bundle, snapshot: snapshotLaunch(bundle, env, s.cwd) };
});
const samples = new Map<string, Sample[]>([["node -e 0", []]]);
const key = (id: string, how: string) => `${id} ${how}`;
for (const l of launches) for (const how of ["snapshot", "bundle"]) samples.set(key(l.id, how), []);

for (let round = 0; round < ROUNDS; round++) {
  samples.get("node -e 0")!.push(await measureBareNode(baseEnv));
  for (const l of launches) {
    for (const [how, launch] of [
      ["snapshot", l.snapshot],
      ["bundle", l.bundle],
    ] as const) {
      if (!launch) continue;
      samples.get(key(l.id, how))!.push(await measureServer(launch.command, launch.args, l.env, l.cwd));
    }
  }
}

const summary = (xs: Sample[]) => ({
  cpu_s: r3(median(xs.map((x) => x.cpu_s))),
  cpu_s_max: r3(Math.max(...xs.map((x) => x.cpu_s))),
  wall_ms: Math.round(median(xs.map((x) => x.wall_ms))),
});
const baseline = summary(samples.get("node -e 0")!);
const result = {
  bench: "servers",
  rounds: ROUNDS,
  cores: cpus().length,
  loadavg_1m: r3(loadavg()[0]!),
  target_cpu_s: TARGET_CPU_S,
  baseline: { "node -e 0": baseline },
  // `started_as` is how the hub starts it; the target applies to that start.
  servers: Object.fromEntries(
    launches.map((l) => {
      const bundle = summary(samples.get(key(l.id, "bundle"))!);
      const snapshot = l.snapshot ? summary(samples.get(key(l.id, "snapshot"))!) : undefined;
      const m = snapshot ?? bundle;
      return [
        l.id,
        {
          started_as: snapshot ? "snapshot" : "bundle",
          ...m,
          cpu_over_node: r3(m.cpu_s / Math.max(baseline.cpu_s, 0.01)),
          cpu_over_target: r3(m.cpu_s / TARGET_CPU_S),
          meets_target: m.cpu_s <= TARGET_CPU_S,
          ...(snapshot && {
            from_bundle: bundle,
            snapshot_cpu_over_bundle: r3(snapshot.cpu_s / bundle.cpu_s),
          }),
        },
      ];
    }),
  ),
};
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
