/**
 * `pda ui` at scale: the session list (first page, a deep page, filters, full-text search) over 100k sessions,
 * each next to the bare SQLite query that returns the same page's ids (the same plan) (no per-row counts, no JSON) measured
 * in the same run, plus the same through the HTTP app (Hono, in process); and a 50-step session's page
 * (timeline, plan diffs, highlighted code) in server time: opened for the first time (a different session each
 * request, so nothing the UI keeps helps) and again (a live page is rebuilt on each write), next to the store's
 * bare timeline read of the same sessions, interleaved in the same run. Prints JSON. Targets (issue #18): list
 * ≤ 100 ms at 100k sessions, a 50-step session's page ≤ 300 ms. Then a robot session's renders: the CPU
 * time of the first step's image (the simulator loaded, the episode played from its reset) and of each next
 * step's (one motion played, one image drawn), against drawing the same scene alone.
 *
 *   node dist/bench/ui.js [--sessions 100000] [--runs 50]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { HostGuard } from "../mcp_servers/index.js";
import { newSession } from "../core/index.js";
import { SessionStore, type BrowseOptions } from "../memory/index.js";
import { RobotEnv } from "../mcp_servers/robot/index.js";
import { simulateSession } from "../memory/tests/simulate.js";
import { RENDER_SIZE, RobotRenders, StaticFiles, createApp, type RobotPanel } from "../ui/index.js";

const { values } = parseArgs({
  options: { sessions: { type: "string", default: "100000" }, runs: { type: "string", default: "50" } },
});
const N = Number(values.sessions);
const RUNS = Number(values.runs);

let seed = 7;
const rand = () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x7fffffff;
};
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
const VERBS = [
  "convert",
  "add",
  "summarise",
  "compare",
  "find",
  "list",
  "translate",
  "check",
  "sort",
  "plot",
];
const NOUNS = [
  "miles",
  "invoice",
  "report",
  "weather",
  "prices",
  "orders",
  "files",
  "emails",
  "sales",
  "tickets",
];
const STATUSES = [
  "succeeded",
  "succeeded",
  "succeeded",
  "failed",
  "budget_exhausted",
  "aborted",
  "awaiting_human",
];
const AGENTS = [null, null, null, null, "planner", "coder", "researcher"];

function fill(store: SessionStore): void {
  const insert = store.db.prepare(`
    INSERT INTO sessions (id, agent, original_query, status, final_answer, solution_summary, result_requirement,
      confidence, tokens, llm_calls, tool_calls, duration_ms, created_at, updated_at, finished_at, session_json)
    VALUES (?, ?, ?, ?, ?, ?, ?, 0.8, ?, 3, 2, 1500, ?, ?, ?, '{}')`);
  const start = Date.UTC(2026, 0, 1);
  store.db.transaction(() => {
    for (let i = 0; i < N; i++) {
      const query = `${pick(VERBS)} ${Math.floor(rand() * 1000)} ${pick(NOUNS)} for ${pick(NOUNS)} w${i % 5000}`;
      const at = new Date(start + i * 60_000).toISOString();
      insert.run(
        `s${String(i).padStart(7, "0")}`,
        pick(AGENTS),
        query,
        pick(STATUSES),
        "done",
        "done",
        query,
        900,
        at,
        at,
        at,
      );
    }
  })();
}

function time(fn: () => unknown, runs = RUNS): { p50_ms: number; p95_ms: number } {
  fn(); // warm the statement cache and the pages
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    fn();
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  const at = (q: number) => Number(ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]!.toFixed(3));
  return { p50_ms: at(0.5), p95_ms: at(0.95) };
}

async function timeAsync(fn: () => Promise<unknown>): Promise<{ p50_ms: number; p95_ms: number }> {
  await fn();
  const ms: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await fn();
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  const at = (q: number) => Number(ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]!.toFixed(3));
  return { p50_ms: at(0.5), p95_ms: at(0.95) };
}

/** A finished robot session: a reset, then `steps` CODE steps of one move each (a square walked round). */
function robotSession(store: SessionStore, steps: number): string {
  const id = "robot-0";
  const now = new Date().toISOString();
  store.startSession(newSession("walk the gripper round a square", id, now));
  for (let i = 0; i < steps; i++) {
    store.saveStep(id, {
      index: i,
      description: `move ${i}`,
      type: "CODE",
      code: "await move_to({x, y, z})",
      status: "completed",
      attempts: 1,
      plan_version: 1,
    });
    const calls: [string, Record<string, unknown>][] =
      i === 0 ? [["reset", { task: "put_block_in_target", seed: 6 }]] : [];
    const corner = [
      [0.2, 0.2],
      [-0.2, 0.2],
      [-0.2, -0.2],
      [0.2, -0.2],
    ][i % 4]!;
    calls.push(["move_to", { x: corner[0], y: corner[1], z: 0.25 }]);
    calls.forEach(([tool, args], seq) =>
      store.recordToolCall(id, i, {
        server: "robot",
        tool,
        ok: true,
        latency_ms: 1,
        bytes: 1,
        started_at: new Date().toISOString(),
        seq,
        state: "done",
        args_json: JSON.stringify(args),
      }),
    );
  }
  store.finishSession({ ...store.getSession(id), status: "succeeded" });
  return id;
}

const cpuMs = async (fn: () => Promise<unknown> | unknown) => {
  const t = process.cpuUsage();
  await fn();
  const u = process.cpuUsage(t);
  return (u.user + u.system) / 1000;
};

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "pda-bench-ui-"));
  const store = SessionStore.open(join(dir, "pda.db"));
  try {
    const t0 = performance.now();
    fill(store);
    // One warm-up session, then one per timed first opening.
    const longs = Array.from({ length: RUNS + 1 }, (_, i) =>
      simulateSession(store, {
        id: `long-${i}`,
        query: `a long session ${i}`,
        // Its own code and plans, so a first opening finds nothing of another session's kept.
        marker: `s${i}`,
        steps: 50,
        replanAfter: [10, 20, 30],
      }),
    );
    const long = longs[0]!;
    const fillMs = performance.now() - t0;
    const raw = (sql: string, ...params: unknown[]) => {
      const s = store.db.prepare(sql);
      return () => s.all(...params);
    };

    // The cursor of the page that starts 90% of the way down.
    const deepAt = Math.floor(N * 0.9);
    let deep: string | undefined;
    for (let i = 0; i < deepAt / 500; i++)
      deep = store.browseSessions({ limit: 500, after: deep }).next ?? undefined;
    const deepRow = store.db
      .prepare("SELECT created_at, seq FROM sessions ORDER BY created_at DESC, seq DESC LIMIT 1 OFFSET ?")
      .get(deepAt - 1) as { created_at: string; seq: number };

    const cases: Record<string, { ui: BrowseOptions; sqlite: () => unknown; http: string }> = {
      first_page: {
        ui: { limit: 50 },
        sqlite: raw("SELECT id FROM sessions ORDER BY created_at DESC, seq DESC LIMIT 50"),
        http: "/api/sessions",
      },
      deep_page_keyset: {
        ui: { limit: 50, after: deep },
        sqlite: raw(
          "SELECT id FROM sessions WHERE (created_at, seq) < (?, ?) ORDER BY created_at DESC, seq DESC LIMIT 50",
          deepRow.created_at,
          deepRow.seq,
        ),
        http: `/api/sessions?after=${deep}`,
      },
      status_failed: {
        ui: { limit: 50, status: "failed" },
        sqlite: raw(
          "SELECT id FROM sessions WHERE status = 'failed' ORDER BY created_at DESC, seq DESC LIMIT 50",
        ),
        http: "/api/sessions?status=failed",
      },
      agent_researcher: {
        ui: { limit: 50, agent: "researcher" },
        sqlite: raw(
          "SELECT id FROM sessions WHERE agent = 'researcher' ORDER BY created_at DESC, seq DESC LIMIT 50",
        ),
        http: "/api/sessions?agent=researcher",
      },
      date_range_one_day: {
        ui: { limit: 50, since: "2026-01-20", until: "2026-01-21" },
        sqlite: raw(
          "SELECT id FROM sessions WHERE created_at >= '2026-01-20' AND created_at < '2026-01-21' ORDER BY created_at DESC, seq DESC LIMIT 50",
        ),
        http: "/api/sessions?since=2026-01-20&until=2026-01-21",
      },
      search_common_word: {
        ui: { limit: 50, search: "invoice" },
        sqlite: raw(
          "SELECT s.id FROM sessions_fts f JOIN sessions s ON s.seq = f.rowid WHERE sessions_fts MATCH '\"invoice\"*' ORDER BY f.rowid DESC LIMIT 50",
        ),
        http: "/api/sessions?q=invoice",
      },
      search_rare_words: {
        ui: { limit: 50, search: "miles w123" },
        sqlite: raw(
          'SELECT s.id FROM sessions_fts f JOIN sessions s ON s.seq = f.rowid WHERE sessions_fts MATCH \'"miles"* AND "w123"*\' ORDER BY f.rowid DESC LIMIT 50',
        ),
        http: "/api/sessions?q=miles+w123",
      },
    };

    const renders = new RobotRenders(store);
    const { app, feed } = createApp({ store, guard: new HostGuard(), files: new StaticFiles(), renders });
    const get = (path: string) => async () => {
      const r = await app.request(path, { headers: { host: "127.0.0.1:4646" } });
      if (r.status !== 200) throw new Error(`${path}: ${r.status}`);
      await r.text();
    };

    const list: Record<string, unknown> = {};
    for (const [name, c] of Object.entries(cases)) {
      const ui = time(() => store.browseSessions(c.ui));
      const sqlite = time(c.sqlite);
      const http = await timeAsync(get(c.http));
      list[name] = {
        rows: store.browseSessions(c.ui).items.length,
        store_p50_ms: ui.p50_ms,
        store_p95_ms: ui.p95_ms,
        http_p50_ms: http.p50_ms,
        http_p95_ms: http.p95_ms,
        sqlite_ids_only_p50_ms: sqlite.p50_ms,
        ratio_store_to_sqlite_p50: Number((ui.p50_ms / Math.max(sqlite.p50_ms, 0.001)).toFixed(2)),
      };
    }
    // What OFFSET paging would cost at the same depth: the reason for the keyset cursor.
    const offset = time(
      raw("SELECT id FROM sessions ORDER BY created_at DESC, seq DESC LIMIT 50 OFFSET 90000"),
    );

    const pageMs = await timeAsync(get(`/api/sessions/${long.session_id}`));
    // First openings, each of another session, against the bare timeline read of the same session; which of
    // the two goes first alternates, so neither always finds SQLite's pages warm.
    const firstMs: number[] = [];
    const timelineMs: number[] = [];
    for (const [i, s] of longs.slice(1).entries()) {
      const page = async () => {
        const t = performance.now();
        await get(`/api/sessions/${s.session_id}`)();
        firstMs.push(performance.now() - t);
      };
      const bare = () => {
        const t = performance.now();
        store.timeline(s.session_id);
        timelineMs.push(performance.now() - t);
      };
      if (i % 2) {
        bare();
        await page();
      } else {
        await page();
        bare();
      }
    }
    const pct = (ms: number[], q: number) => {
      const sorted = [...ms].sort((a, b) => a - b);
      return Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(3));
    };
    // A robot session's renders, in CPU time (the machine is shared): each step's "after" image in page order.
    const ROBOT_STEPS = 12;
    const robot = robotSession(store, ROBOT_STEPS);
    const panel = (await (
      await app.request(`/api/sessions/${robot}`, { headers: { host: "127.0.0.1:4646" } })
    ).json()) as {
      robot: RobotPanel;
    };
    const afters = Array.from(
      { length: ROBOT_STEPS },
      (_, i) => (panel.robot.steps[i]!.after as { src: string }).src,
    );
    const renderMs: number[] = [];
    for (const src of afters) renderMs.push(await cpuMs(get(src)));
    const env = await RobotEnv.create();
    env.reset("put_block_in_target", 6);
    env.image("top", RENDER_SIZE);
    const bareMs: number[] = [];
    for (let i = 0; i < RUNS; i++) bareMs.push(await cpuMs(() => env.image("top", RENDER_SIZE)));
    env.close();
    renders.close();
    const next = renderMs.slice(1);
    feed.stop();
    console.log(
      JSON.stringify(
        {
          bench: "ui",
          sessions: N + 1,
          fill_ms: Math.round(fillMs),
          machine: { cpus: cpus().length, load1: Number(loadavg()[0]!.toFixed(2)) },
          list,
          sqlite_offset_90000_p50_ms: offset.p50_ms,
          session_page_50_steps: {
            steps: long.steps.length,
            first_open_http_p50_ms: pct(firstMs, 0.5),
            first_open_http_p95_ms: pct(firstMs, 0.95),
            store_timeline_p50_ms: pct(timelineMs, 0.5),
            store_timeline_p95_ms: pct(timelineMs, 0.95),
            ratio_first_open_to_timeline_p50: Number((pct(firstMs, 0.5) / pct(timelineMs, 0.5)).toFixed(2)),
            again_http_p50_ms: pageMs.p50_ms,
            again_http_p95_ms: pageMs.p95_ms,
            target_ms: 300,
          },
          list_target_ms: 100,
          robot_renders: {
            size_px: RENDER_SIZE,
            steps: ROBOT_STEPS,
            first_step_cpu_ms: Number(renderMs[0]!.toFixed(1)),
            next_step_cpu_p50_ms: pct(next, 0.5),
            next_step_cpu_p95_ms: pct(next, 0.95),
            bare_image_cpu_p50_ms: pct(bareMs, 0.5),
            ratio_next_step_to_bare_image_p50: Number((pct(next, 0.5) / pct(bareMs, 0.5)).toFixed(2)),
          },
        },
        null,
        2,
      ),
    );
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
