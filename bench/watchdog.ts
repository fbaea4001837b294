/**
 * The cost of the hub's watchdog (mcp_servers/hub/watchdog.ts): its resident memory and the CPU it used
 * while a hub with `--servers` stdio servers made `--calls` calls and restarted each server once, next to
 * the same figures of this (pda) process and of one server, measured in the same run. Prints JSON.
 *   node dist/bench/watchdog.js [--servers 3] [--calls 2000]
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { distPath } from "../core/index.js";
import { MultiMCP } from "../mcp_servers/index.js";
import { watchdogPid } from "../mcp_servers/hub/watchdog.js";

const { values } = parseArgs({ options: { servers: { type: "string" }, calls: { type: "string" } } });
const SERVERS = Number(values.servers ?? 3);
const CALLS = Number(values.calls ?? 2000);

/** Resident memory in KB and CPU time (user + system) in ms of a process, from /proc. */
function usage(pid: number): { rss_kb: number; cpu_ms: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(f[11]) + Number(f[12]); // utime, stime (clock ticks, 100 per second on Linux)
  return { rss_kb: rss, cpu_ms: ticks * 10 };
}

const math = distPath("mcp_servers/math/server.js");
const hub = await MultiMCP.start({
  servers: Array.from({ length: SERVERS }, (_, i) => ({
    id: `m${i}`,
    command: process.execPath,
    args: [math],
  })),
});
try {
  const dog = watchdogPid();
  if (dog === undefined) throw new Error("no watchdog started (Linux only)");
  for (let i = 0; i < CALLS; i++) await hub.call(`m${i % SERVERS}.add`, { a: i, b: 1 });
  // A restart of every server: two more lines each through the watchdog's pipe.
  for (const s of hub.status()) process.kill(s.pid!, "SIGKILL");
  await new Promise((r) => setTimeout(r, 1500));
  for (let i = 0; i < SERVERS; i++)
    await hub.call(`m${i}.add`, { a: 1, b: 1 }).catch(() => hub.call(`m${i}.add`, { a: 1, b: 1 }));
  const watchdog = usage(dog);
  const self = usage(process.pid);
  const server = usage(hub.status()[0]!.pid!);
  process.stdout.write(
    `${JSON.stringify(
      {
        servers: SERVERS,
        calls: CALLS,
        watchdog,
        pda: self,
        one_server: server,
        watchdog_rss_vs_pda: +(watchdog.rss_kb / self.rss_kb).toFixed(4),
        watchdog_rss_vs_server: +(watchdog.rss_kb / server.rss_kb).toFixed(4),
        watchdog_cpu_vs_pda: +(watchdog.cpu_ms / Math.max(1, self.cpu_ms)).toFixed(4),
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await hub.close();
}
