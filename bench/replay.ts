/**
 * What durable steps cost (#19). A CODE step making 100 tool calls, run in the real sandbox:
 *   - live, logged: each call's intent inserted before it is sent and completed after (the journal), against
 *     the same step with the single after-the-call row pda wrote before durable steps, and with no log at all;
 *   - replayed: the same step run again over its log (what a resume does), against making its 100 calls for
 *     real, in process (the cheapest call there is) and to the bundled math server over stdio (a real one).
 * The store is a SessionStore on a file. Each figure is the median of --rounds runs; variants alternate so
 * noise falls on all. Each step is timed twice: wall time, and this process's CPU time (main thread and the
 * sandbox's thread, user + system), which a loaded machine inflates far less. The in-process figures and
 * ratios are CPU time; the stdio ones are wall time (the server's own CPU is in another process). Prints JSON.
 *
 *   node dist/bench/replay.js [--calls 100] [--rounds 15] [--only in_process]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { Profile } from "../config/index.js";
import { runCode } from "../action/index.js";
import { DEFAULT_CONFIG_DIR, newSession, systemClock, type ToolHost, type ToolInfo } from "../core/index.js";
import { SessionStore } from "../memory/index.js";
import { MultiMCP } from "../mcp_servers/index.js";
import { scopedHost } from "../agent/kernel/index.js";
import { StepJournal } from "../agent/kernel/journal.js";

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "100" },
    rounds: { type: "string", default: "15" },
    only: { type: "string" },
  },
});
const CALLS = Number(values.calls);
const ROUNDS = Number(values.rounds);
const limits = Profile.parse({ sandbox: { max_tool_calls: CALLS + 10 } }).sandbox;

const double: ToolInfo = {
  server: "calc",
  name: "double",
  qualified: "calc.double",
  unique: true,
  description: "twice a",
  inputSchema: { type: "object", properties: { a: { type: "number" } }, required: ["a"] },
};
/** The cheapest real call: answered in this process, no transport. Like a real host, it says when it sends. */
const inProcess: ToolHost = {
  tools: () => [double],
  onCall: () => () => {},
  call: async (_name, args, options) => {
    options?.onSend?.();
    return { value: (args.a as number) * 2 };
  },
};
const inProcessCode = `let s = 0; for (let i = 0; i < ${CALLS}; i++) s += (await double({ a: i })).value; return s;`;
const stdioCode = `let s = 0; for (let i = 0; i < ${CALLS}; i++) s += await add({ a: i, b: 1 }); return s;`;

const dir = mkdtempSync(join(tmpdir(), "pda-bench-replay-"));
const store = SessionStore.open(join(dir, "pda.db"));
const session = newSession("bench", "bench-session", systemClock.iso());
store.startSession(session);
let stepIndex = 0;

/** A step's wall and CPU time, in ms. */
interface Took {
  wall: number;
  cpu: number;
}
type Variant = () => Promise<Took>;

async function timed(code: string, host: ToolHost): Promise<Took> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await runCode(code, host, limits);
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  if (!r.ok) throw new Error(`the bench step failed: ${r.error?.code}: ${r.error?.message}`);
  return { wall, cpu: (c.user + c.system) / 1000 };
}

/** The step through the journal, logging as a session does; `replay` runs the previous step's index again. */
function journaled(host: ToolHost, code: string, replay: boolean): Variant {
  return async () => {
    const index = replay ? stepIndex - 1 : stepIndex++;
    const journal = new StepJournal(store, session, undefined, systemClock.now, systemClock.iso);
    const scoped = scopedHost(journal.host(host), systemClock.now, systemClock.iso);
    const off = scoped.onCall((r) => store.recordToolCall(session.session_id, index, r));
    journal.begin(index, () => {});
    try {
      return await timed(code, scoped);
    } finally {
      journal.end();
      off();
    }
  };
}

/** One row per call after it ends: what pda logged before durable steps. */
function loggedAfter(host: ToolHost, code: string): Variant {
  return async () => {
    const index = stepIndex++;
    const scoped = scopedHost(host, systemClock.now, systemClock.iso);
    const off = scoped.onCall((r) => store.recordToolCall(session.session_id, index, r));
    try {
      return await timed(code, scoped);
    } finally {
      off();
    }
  };
}

const unlogged =
  (host: ToolHost, code: string): Variant =>
  () =>
    timed(code, scopedHost(host, systemClock.now, systemClock.iso));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Per call, in ms: the median step's wall and CPU time over CALLS. */
async function measure(variants: Record<string, Variant>): Promise<Record<string, Took>> {
  const times: Record<string, Took[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  for (const v of Object.values(variants)) await v(); // warm-up
  for (let r = 0; r < ROUNDS; r++) for (const [k, v] of Object.entries(variants)) times[k]!.push(await v());
  return Object.fromEntries(
    Object.entries(times).map(([k, xs]) => [
      k,
      { wall: median(xs.map((x) => x.wall)) / CALLS, cpu: median(xs.map((x) => x.cpu)) / CALLS },
    ]),
  );
}

const onlyInProcess = values.only === "in_process";
const hub = onlyInProcess
  ? undefined
  : await MultiMCP.start({
      servers: [
        {
          id: "math",
          command: process.execPath,
          args: [join(DEFAULT_CONFIG_DIR, "../dist/mcp_servers/math/server.js")],
        },
      ],
    });
try {
  // Live and replayed alternate, so each replay runs over the log the live run just wrote.
  const inproc = await measure({
    unlogged: unlogged(inProcess, inProcessCode),
    logged_after: loggedAfter(inProcess, inProcessCode),
    journaled_live: journaled(inProcess, inProcessCode, false),
    replayed: journaled(inProcess, inProcessCode, true),
  });
  const stdio = hub
    ? await measure({
        unlogged: unlogged(hub, stdioCode),
        journaled_live: journaled(hub, stdioCode, false),
        replayed: journaled(hub, stdioCode, true),
      })
    : undefined;
  const us = (ms: number) => Math.round(ms * 1000 * 10) / 10;
  const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
  const cpu = (t: Record<string, Took>) =>
    Object.fromEntries(Object.entries(t).map(([k, v]) => [k, us(v.cpu)]));
  const wall = (t: Record<string, Took>) =>
    Object.fromEntries(Object.entries(t).map(([k, v]) => [k, us(v.wall)]));
  console.log(
    JSON.stringify(
      {
        calls_per_step: CALLS,
        rounds: ROUNDS,
        machine: { cpus: cpus().length, loadavg: loadavg().map((l) => Math.round(l * 10) / 10) },
        per_call_cpu_us: { in_process: cpu(inproc) },
        per_call_wall_us: { in_process: wall(inproc), ...(stdio && { stdio_math: wall(stdio) }) },
        logging_added_per_live_call_cpu_us: {
          vs_one_row_after_the_call: us(inproc.journaled_live!.cpu - inproc.logged_after!.cpu),
          vs_no_log: us(inproc.journaled_live!.cpu - inproc.unlogged!.cpu),
          goal: 20,
        },
        replay_per_call_vs_real_call: {
          in_process_cpu: ratio(inproc.replayed!.cpu, inproc.unlogged!.cpu),
          ...(stdio && { stdio_math_server_wall: ratio(stdio.replayed!.wall, stdio.unlogged!.wall) }),
          goal: 0.2,
        },
      },
      null,
      2,
    ),
  );
} finally {
  await hub?.close();
  store.close();
  rmSync(dir, { recursive: true, force: true });
}
