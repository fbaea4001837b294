/**
 * What durable steps cost (#19). A CODE step making 100 tool calls, run in the real sandbox:
 *   - live, logged: each call's intent inserted before it is sent and completed after (the journal), against
 *     the same step with the single after-the-call row pda wrote before durable steps, and with no log at all;
 *   - replayed: the same step run again over its log (what a resume does), against making its 100 calls for
 *     real, in process (the cheapest call there is) and to the bundled math server over stdio (a real one);
 *   - the three live variants again with the calls made from host code, no sandbox (`from_host_code`), and a
 *     fourth: the same finished rows in the store's window with no intents (what the intents alone add): a
 *     sandboxed in-process call is mostly the two thread wakes that carry it, which cost ~100-170 µs each on
 *     this VM and swing with it (far more than the log), so this is where the logging's own cost shows.
 * The store is a SessionStore on a file. Each figure is the median of --rounds runs, after --warmup rounds (as
 * in the other benches, the paths V8 has optimised; with one, as until 2026-11-29, the per-step paths still ran
 * unoptimised and the replay ratio read ~1.25 × its steady value); variants alternate so
 * noise falls on all. The ratio and the differences compared with the goals are paired: taken within each
 * round, between steps run one after the other, then the median over the rounds (with the quartiles), since
 * this machine's speed drifts between rounds more than the figures differ. Each step is timed twice: wall time, and this process's CPU time (main thread and the
 * sandbox's thread, user + system), which a loaded machine inflates far less. The in-process figures and
 * ratios are CPU time; the stdio ones are wall time (the server's own CPU is in another process). Prints JSON.
 *
 *   node dist/bench/replay.js [--calls 100] [--rounds 30] [--warmup 100] [--only in_process]
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
    rounds: { type: "string", default: "30" },
    warmup: { type: "string", default: "100" },
    only: { type: "string" },
  },
});
const CALLS = Number(values.calls);
const ROUNDS = Number(values.rounds);
const WARMUP = Math.max(1, Number(values.warmup));
const limits = Profile.parse({ sandbox: { max_tool_calls: CALLS + 10 } }).sandbox;

const double: ToolInfo = {
  server: "calc",
  name: "double",
  qualified: "calc.double",
  unique: true,
  description: "twice a",
  inputSchema: { type: "object", properties: { a: { type: "number" } }, required: ["a"] },
};
/**
 * The cheapest real call: answered in this process, no transport. Like a real host, it says when it sends, and
 * its tool list is one array until it changes (the hub's is), by which the sandbox keeps the list's binding.
 */
const TOOLS = [double];
const inProcess: ToolHost = {
  tools: () => TOOLS,
  onCall: () => () => {},
  call: async (_name, args, options) => {
    options?.onSend?.();
    return { value: (args.a as number) * 2 };
  },
};
const inProcessCode = `let s = 0; for (let i = 0; i < ${CALLS}; i++) s += (await double({ a: i })).value; return s;`;
/** Not code: the calls made from host code, without the sandbox (see hostCalls). */
const HOST_CODE = "<host>";
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

/** A "step" of host code making CALLS calls itself, in sequence, numbered as a sandbox numbers them. */
function hostCalls(host: ToolHost) {
  return async () => {
    for (let i = 0; i < CALLS; i++) await host.call("calc.double", { a: i }, { seq: i });
  };
}

/** The step's code run against `host`: `before` and `after` (the journal's reads and writes) are timed with it. */
async function timed(code: string, host: ToolHost, before = () => {}, after = () => {}): Promise<Took> {
  const run =
    code === HOST_CODE
      ? hostCalls(host)
      : async () => {
          const r = await runCode(code, host, limits);
          if (!r.ok) throw new Error(`the bench step failed: ${r.error?.code}: ${r.error?.message}`);
        };
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  before();
  try {
    await run();
  } finally {
    after();
  }
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { wall, cpu: (c.user + c.system) / 1000 };
}

/**
 * The step through the journal, logging as a session does; `replay` runs the previous step's index again.
 * Timed from the journal's read of the step's log (what a resume reads) to its end (the step's rows committed).
 */
function journaled(host: ToolHost, code: string, replay: boolean): Variant {
  return async () => {
    const index = replay ? stepIndex - 1 : stepIndex++;
    const journal = new StepJournal(store, session, undefined, systemClock.now, systemClock.iso);
    const scoped = scopedHost(journal.host(host), systemClock.now, systemClock.iso);
    const off = scoped.onCall((r) => store.recordToolCall(session.session_id, index, r));
    try {
      return await timed(
        code,
        scoped,
        () => journal.begin(index, () => {}),
        () => journal.end(),
      );
    } finally {
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

/**
 * The finished rows alone, as durable steps write them (each in the store's 50 ms window, not a commit per
 * call), with no intents and no argument hashing: the cheapest after-the-call log pda can write, so the
 * difference from journaled_live is what the intents themselves add.
 */
function rowsWindowed(host: ToolHost, code: string): Variant {
  return async () => {
    const index = stepIndex++;
    let seq = 0;
    const scoped = scopedHost(host, systemClock.now, systemClock.iso);
    const off = scoped.onCall((r) =>
      store.recordToolCall(session.session_id, index, { ...r, seq: seq++, state: "done" }),
    );
    try {
      // Committed at the step's end, as the journal's rows are (with no lines of its own, endStep would leave
      // them for the next write).
      return await timed(code, scoped, undefined, () => {
        store.endStep(session.session_id, index);
        store.flush();
      });
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

const quartiles = (xs: number[]): [number, number] => {
  const s = [...xs].sort((a, b) => a - b);
  return [s[Math.floor((s.length - 1) / 4)]!, s[Math.ceil(((s.length - 1) * 3) / 4)]!];
};

interface Measured {
  /** Per call, in ms: the median step's wall and CPU time over CALLS. */
  median: Record<string, Took>;
  /** Each round's steps, per call, in ms. */
  rounds: Record<string, Took[]>;
}

async function measure(variants: Record<string, Variant>): Promise<Measured> {
  const times: Record<string, Took[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  // Until V8 has optimised every path: a step's own code (reading the log, preparing the replay) runs once per
  // step, so it tiers up only after dozens of steps, long after the per-call code.
  for (let r = 0; r < WARMUP; r++) for (const v of Object.values(variants)) await v();
  for (let r = 0; r < ROUNDS; r++)
    for (const [k, v] of Object.entries(variants)) {
      const t = await v();
      times[k]!.push({ wall: t.wall / CALLS, cpu: t.cpu / CALLS });
    }
  return {
    rounds: times,
    median: Object.fromEntries(
      Object.entries(times).map(([k, xs]) => [
        k,
        { wall: median(xs.map((x) => x.wall)), cpu: median(xs.map((x) => x.cpu)) },
      ]),
    ),
  };
}

/** f of two variants' steps within each round: the median over the rounds, and the quartiles. */
function paired(
  m: Measured,
  a: string,
  b: string,
  f: (a: Took, b: Took) => number,
  round: (x: number) => number,
) {
  const xs = m.rounds[a]!.map((x, i) => f(x, m.rounds[b]![i]!));
  const [q1, q3] = quartiles(xs);
  return { median: round(median(xs)), quartiles: [round(q1), round(q3)] };
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
  // The same three without the sandbox: what the logging itself costs, apart from the two thread wakes per
  // call that dominate a sandboxed in-process call on this machine and swing with it.
  const host = await measure({
    unlogged: unlogged(inProcess, HOST_CODE),
    logged_after: loggedAfter(inProcess, HOST_CODE),
    rows_windowed: rowsWindowed(inProcess, HOST_CODE),
    journaled_live: journaled(inProcess, HOST_CODE, false),
  });
  const stdio = hub
    ? await measure({
        unlogged: unlogged(hub, stdioCode),
        journaled_live: journaled(hub, stdioCode, false),
        replayed: journaled(hub, stdioCode, true),
      })
    : undefined;
  const us = (ms: number) => Math.round(ms * 1000 * 10) / 10;
  const hundredths = (x: number) => Math.round(x * 100) / 100;
  const ratio = (a: number, b: number) => hundredths(a / b);
  const added = (a: string, b: string, m = inproc) => paired(m, a, b, (x, y) => x.cpu - y.cpu, us);
  const cpu = (t: Record<string, Took>) =>
    Object.fromEntries(Object.entries(t).map(([k, v]) => [k, us(v.cpu)]));
  const wall = (t: Record<string, Took>) =>
    Object.fromEntries(Object.entries(t).map(([k, v]) => [k, us(v.wall)]));
  console.log(
    JSON.stringify(
      {
        calls_per_step: CALLS,
        rounds: ROUNDS,
        warmup_rounds: WARMUP,
        machine: { cpus: cpus().length, loadavg: loadavg().map((l) => Math.round(l * 10) / 10) },
        per_call_cpu_us: { in_process: cpu(inproc.median), from_host_code: cpu(host.median) },
        per_call_wall_us: {
          in_process: wall(inproc.median),
          ...(stdio && { stdio_math: wall(stdio.median) }),
        },
        logging_added_per_live_call_cpu_us: {
          vs_one_row_after_the_call: added("journaled_live", "logged_after"),
          vs_no_log: added("journaled_live", "unlogged"),
          from_host_code: {
            vs_one_row_after_the_call: added("journaled_live", "logged_after", host),
            vs_the_same_rows_without_intents: added("journaled_live", "rows_windowed", host),
            vs_no_log: added("journaled_live", "unlogged", host),
          },
          goal: 20,
        },
        replay_per_call_vs_real_call: {
          in_process_cpu: paired(inproc, "replayed", "unlogged", (x, y) => x.cpu / y.cpu, hundredths),
          ...(stdio && {
            stdio_math_server_wall: ratio(stdio.median.replayed!.wall, stdio.median.unlogged!.wall),
          }),
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
