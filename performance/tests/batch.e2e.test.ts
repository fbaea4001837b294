/**
 * `pda batch` as a child process: the real @google/genai client against the fake Gemini server (429s with
 * RetryInfo delays, 503s, malformed replies injected), the real math MCP server, a real SQLite file. Every
 * query must come out exactly once, also after a SIGKILL and `--resume`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { parse } from "csv-parse/sync";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startFakeGemini, type FakeGemini, type FakeGeminiReply } from "../../testing/index.js";
import { QUERY_COLUMNS, TOOL_COLUMNS, BatchState } from "../index.js";
import { escapeRegExp } from "../../core/index.js";
import { fakeAgent, queryOf } from "../testing/fake-agent.js";

const MAIN = join(import.meta.dirname, "..", "..", "dist", "main.js");

interface Child {
  proc: ChildProcess;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

function pda(args: string[], env: Record<string, string>): Child {
  const proc = spawn(process.execPath, [MAIN, ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  proc.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  proc.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => proc.kill("SIGKILL"), 120_000);
  const done = new Promise<{
    code: number | null;
    signal: NodeJS.Signals | null;
    stdout: string;
    stderr: string;
  }>((resolve) =>
    proc.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    }),
  );
  return { proc, done };
}

function readCsv(path: string): { header: string[]; rows: Record<string, string>[] } {
  const records = parse(readFileSync(path, "utf8")) as string[][];
  const [header, ...body] = records;
  return { header: header!, rows: body.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i]!]))) };
}

function queriesCsv(path: string, n: number, extra: (i: number) => string[] = () => []) {
  const lines = ["Query,Tools Needed,Complexity,Expected,Owner"];
  const queries: Array<{ query: string; expected: number }> = [];
  for (let i = 0; i < n; i++) {
    const a = 100 + i * 7;
    const b = 3 * i + 1;
    const query = `What is ${a} + ${b}?`;
    queries.push({ query, expected: a + b });
    // The original system's extra quotes around the query.
    lines.push(`"""${query}""",add,low,${a + b},team${i % 3}`, ...extra(i));
  }
  writeFileSync(path, `${lines.join("\n")}\n`);
  return queries;
}

/** The batch rows done in the store at `db`, once there are `atLeast` (or after 30 s). */
async function doneRows(db: string, atLeast: number): Promise<number> {
  let done = 0;
  for (let i = 0; i < 600 && done < atLeast; i++) {
    await new Promise((r) => setTimeout(r, 50));
    if (!existsSync(db)) continue;
    const sqlite = new Database(db, { readonly: true, fileMustExist: true });
    try {
      done = (
        sqlite.prepare("SELECT count(*) AS n FROM batch_items WHERE status = 'done'").get() as { n: number }
      ).n;
    } catch {
      done = 0; // tables not created yet
    } finally {
      sqlite.close();
    }
  }
  return done;
}

describe("pda batch, end to end", () => {
  let dir: string;
  let gemini: FakeGemini | undefined;
  let child: Child | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "pda-batch-"));
  });
  afterEach(async () => {
    child?.proc.kill("SIGKILL");
    await gemini?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("runs 60 queries through 429s, 503s and malformed replies: one row per query, exact columns", async () => {
    const input = join(dir, "queries.csv");
    const queries = queriesCsv(input, 60);
    const broken = queries[13]!.query; // always unparseable: fails after the repair round
    const asks = queries[29]!.query; // the agent asks a question: policy:fail answers for the absent human
    const injected = { 429: 0, 503: 0, malformed: 0 };
    gemini = await startFakeGemini({
      handler: fakeAgent({
        ask: (q) => q === asks,
        fault: (req): FakeGeminiReply | undefined => {
          if (queryOf(req) === broken && req.role === "decision") return { text: "I will add them {" };
          if (req.n % 17 === 5) return (injected[429]++, { status: 429, retryDelay: "1s" });
          if (req.n % 23 === 7) return (injected[503]++, { status: 503, message: "overloaded" });
          if (req.n % 19 === 11) return (injected.malformed++, { text: '{"entities": [' });
          return undefined;
        },
      }),
    });
    const out = join(dir, "out");
    const db = join(dir, "pda.db");
    child = pda(["batch", input, "--out", out, "--db", db, "--concurrency", "8", "--no-memory"], {
      GEMINI_API_KEY: "dummy-key",
      GEMINI_BASE_URL: gemini.url,
    });
    const r = await child.done;
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^60\/60 queries done, 58 succeeded, 58\/60 correct$/m);
    expect(injected[429]).toBeGreaterThan(3);
    expect(injected[503]).toBeGreaterThan(2);
    expect(injected.malformed).toBeGreaterThan(2);

    const q = readCsv(join(out, "test_queries_output.csv"));
    expect(q.header).toEqual([...QUERY_COLUMNS, "Owner"]);
    expect(q.rows).toHaveLength(60);
    expect(new Set(q.rows.map((x) => x.Query)).size).toBe(60);
    expect(new Set(q.rows.map((x) => x["Session Id"])).size).toBe(60);
    q.rows.forEach((row, i) => {
      const want = queries[i]!;
      expect(row.Query).toBe(want.query);
      expect(row.Expected).toBe(String(want.expected));
      expect(row.Owner).toBe(`team${i % 3}`);
      if (row.Query === broken) {
        expect(row).toMatchObject({
          Status: "failed",
          Correct: "false",
          "Tools Executed": "No tools executed",
        });
      } else if (row.Query === asks) {
        expect(row).toMatchObject({ Status: "failed", Correct: "false", "Human Inputs": "1" });
      } else {
        expect(row).toMatchObject({
          Status: "succeeded",
          Output: String(want.expected),
          Correct: "true",
          "Tools Executed": "add(success)",
          Steps: "1",
          "Plan Versions": "1",
        });
        expect(Number(row["LLM Calls"])).toBeGreaterThanOrEqual(3);
      }
    });

    const t = readCsv(join(out, "tool_performance_status.csv"));
    expect(t.header).toEqual([...TOOL_COLUMNS]);
    expect(t.rows).toEqual([
      {
        "Tool Name": "add",
        "Number of Times Invoked": "58",
        "Success Rate (%)": "100.00",
        Server: "math",
        Failures: "0",
        "Error Kinds": "",
        "Median ms": expect.stringMatching(/^\d+$/),
        "P95 ms": expect.stringMatching(/^\d+$/),
      },
    ]);

    // Every 429 was waited out and retried, and the run says so.
    const state = BatchState.parse(JSON.parse(readFileSync(join(out, "batch.json"), "utf8")));
    expect(state.invocations).toHaveLength(1);
    expect(state.invocations[0]).toMatchObject({ status: "finished", ran: 60, rate_limited: injected[429] });
    expect(state.invocations[0]!.rate_limit_wait_ms).toBeGreaterThanOrEqual(1000);
    expect(readFileSync(join(out, "summary.md"), "utf8")).toMatch(/- Correct: 58 of 60/);

    const sqlite = new Database(db, { readonly: true });
    try {
      const sessions = sqlite
        .prepare("SELECT id, status FROM sessions WHERE agent = 'batch'")
        .all() as Array<{
        id: string;
        status: string;
      }>;
      const byId = new Map(sessions.map((s) => [s.id, s.status]));
      for (const row of q.rows) expect(byId.get(row["Session Id"]!)).toBe(row.Status);
      const items = sqlite.prepare("SELECT status, count(*) AS n FROM batch_items GROUP BY status").all();
      expect(items).toEqual([{ status: "done", n: 60 }]);
      // The question was answered by the policy, and logged as such.
      const asked = q.rows.find((x) => x.Query === asks)!["Session Id"];
      expect(
        sqlite.prepare("SELECT kind, answered_by FROM human_inputs WHERE session_id = ?").all(asked),
      ).toEqual([{ kind: "clarification", answered_by: "policy:fail" }]);
    } finally {
      sqlite.close();
    }
  }, 180_000); // 60 queries through 1 s retry delays: ~20 s quiet, past a minute beside a burst of processes

  it("--max-cost-usd is a per-query cost budget: a query that spends more ends budget_exhausted", async () => {
    const input = join(dir, "queries.csv");
    const queries = queriesCsv(input, 4);
    const pricey = queries[2]!;
    const [a, b] = /What is (\d+) \+ (\d+)/.exec(pricey.query)!.slice(1).map(Number);
    gemini = await startFakeGemini({
      handler: fakeAgent({
        // gemini-flash-latest at the bundled models.yaml prices ($0.5 in, $3 out per million tokens): this
        // decision costs $0.016; every other query about $0.0005 in all.
        fault: (req) =>
          req.role === "decision" && queryOf(req) === pricey.query
            ? {
                json: {
                  plan_text: ["Step 0: add the two numbers", "Step 1: answer"],
                  step_index: 0,
                  description: "add",
                  type: "CODE",
                  code: `return await add(${a}, ${b});`,
                },
                usage: { input: 20_000, output: 2_000 },
              }
            : undefined,
      }),
    });
    const out = join(dir, "out");
    const db = join(dir, "pda.db");
    const env = { GEMINI_API_KEY: "dummy-key", GEMINI_BASE_URL: gemini.url };
    const args = ["batch", input, "--out", out, "--db", db, "--concurrency", "2", "--no-memory"];
    for (const bad of ["0", "-1", "cheap"]) {
      child = pda([...args, "--max-cost-usd", bad], env);
      const refused = await child.done;
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(`--max-cost-usd ${bad}: expected a number > 0`);
    }
    child = pda([...args, "--max-cost-usd", "0.01"], env);
    const r = await child.done;
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^4\/4 queries done, 3 succeeded, 3\/4 correct$/m);
    const q = readCsv(join(out, "test_queries_output.csv"));
    expect(q.rows.map((x) => [x.Query, x.Status, x["Tools Executed"]])).toEqual(
      queries.map((x) =>
        x === pricey
          ? [x.query, "budget_exhausted", "No tools executed"]
          : [x.query, "succeeded", "add(success)"],
      ),
    );
    const state = BatchState.parse(JSON.parse(readFileSync(join(out, "batch.json"), "utf8")));
    expect(state.options.budgets).toEqual({ max_cost_usd: 0.01 });
    const sqlite = new Database(db, { readonly: true });
    try {
      const id = q.rows[2]!["Session Id"];
      const row = sqlite.prepare("SELECT status_reason FROM sessions WHERE id = ?").get(id) as {
        status_reason: string;
      };
      expect(row.status_reason).toMatch(/^reached the cost budget \(\$0\.01\): \$0\.016\d* by this session/);
    } finally {
      sqlite.close();
    }
  });

  it("survives SIGKILL mid-run: --resume finishes the rest, every query exactly once", async () => {
    const input = join(dir, "queries.csv");
    const queries = queriesCsv(input, 30);
    gemini = await startFakeGemini({
      handler: fakeAgent({
        delayMs: 60,
        fault: (req) => (req.n % 29 === 3 ? { status: 429, retryDelay: "1s" } : undefined),
      }),
    });
    const out = join(dir, "out");
    const db = join(dir, "pda.db");
    const env = { GEMINI_API_KEY: "dummy-key", GEMINI_BASE_URL: gemini.url };
    const args = ["batch", input, "--out", out, "--db", db, "--concurrency", "4", "--no-memory"];
    child = pda(args, env);

    // Kill it once a few queries are done and others are in flight.
    expect(await doneRows(db, 8)).toBeGreaterThanOrEqual(8);
    child.proc.kill("SIGKILL");
    const killed = await child.done;
    expect(killed.signal).toBe("SIGKILL");
    const sq = new Database(db, { readonly: true });
    const doneAtKill = (
      sq.prepare("SELECT count(*) AS n FROM batch_items WHERE status = 'done'").get() as { n: number }
    ).n;
    // The rows in flight, whose sessions the kill left "running".
    const inFlight = sq
      .prepare(
        `SELECT i.item_key, i.session_id FROM batch_items i JOIN sessions s ON s.id = i.session_id
          WHERE i.status = 'running' AND s.status = 'running'`,
      )
      .all() as Array<{ item_key: string; session_id: string }>;
    sq.close();
    expect(inFlight.length).toBeGreaterThan(0);

    // What the crash left is a usable CSV: whole rows, no duplicates, fewer than all.
    const partial = readCsv(join(out, "test_queries_output.csv"));
    expect(partial.header).toEqual([...QUERY_COLUMNS, "Owner"]);
    expect(partial.rows.length).toBeLessThan(30);
    expect(new Set(partial.rows.map((x) => x.Query)).size).toBe(partial.rows.length);

    // Without --resume the folder is not overwritten by accident.
    child = pda(args, env);
    const refused = await child.done;
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/already holds batch run .* \(\d+\/30 queries done\); add --resume/);

    child = pda([...args, "--resume"], env);
    const r = await child.done;
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^30\/30 queries done, 30 succeeded, 30\/30 correct$/m);

    const q = readCsv(join(out, "test_queries_output.csv"));
    expect(q.rows.map((x) => x.Query)).toEqual(queries.map((x) => x.query));
    expect(new Set(q.rows.map((x) => x["Session Id"])).size).toBe(30);
    expect(q.rows.every((x) => x.Status === "succeeded" && x.Correct === "true")).toBe(true);
    const t = readCsv(join(out, "tool_performance_status.csv"));
    // One add per row: a session the crash cut short goes on from its logged step, and a step the kill cut
    // short replays the calls it had made. Only an add the kill caught in flight (in doubt: sent, no answer
    // logged) was made again (add is read-only, safe to repeat), and that is counted: it was sent twice.
    const check = new Database(db, { readonly: true });
    const { n: inDoubt } = check
      .prepare("SELECT count(*) AS n FROM tool_calls WHERE state = 'in_doubt'")
      .get() as { n: number };
    const { n: replayed } = check
      .prepare("SELECT count(*) AS n FROM tool_calls_all WHERE state = 'replayed'")
      .get() as { n: number };
    check.close();
    expect(inDoubt).toBeLessThanOrEqual(inFlight.length);
    expect(replayed).toBeLessThanOrEqual(inFlight.length);
    expect(t.rows.map((x) => [x["Tool Name"], x["Number of Times Invoked"]])).toEqual([
      ["add", String(30 + inDoubt)],
    ]);

    const state = BatchState.parse(JSON.parse(readFileSync(join(out, "batch.json"), "utf8")));
    expect(state.invocations.map((i) => i.status)).toEqual(["running", "finished"]);
    expect(state.invocations[0]!.finished_at).toBeNull();
    expect(state.invocations[1]!.ran).toBe(30 - doneAtKill);
    const sqlite = new Database(db, { readonly: true });
    try {
      const items = sqlite.prepare("SELECT status, count(*) AS n FROM batch_items GROUP BY status").all();
      expect(items).toEqual([{ status: "done", n: 30 }]);
      // The sessions the kill interrupted were continued, not run again beside themselves: one session per
      // row, none left running.
      const byKey = sqlite.prepare("SELECT session_id FROM batch_items WHERE item_key = ?");
      for (const f of inFlight) expect(byKey.get(f.item_key)).toEqual({ session_id: f.session_id });
      expect(
        sqlite
          .prepare("SELECT status, count(*) AS n FROM sessions WHERE agent = 'batch' GROUP BY status")
          .all(),
      ).toEqual([{ status: "succeeded", n: 30 }]);
    } finally {
      sqlite.close();
    }
  }, 180_000); // two batch processes of 30 queries: near a minute on a busy machine

  it("Ctrl-C stops the run gently, saying so: the queries in flight are kept, and --resume finishes them", async () => {
    const input = join(dir, "queries.csv");
    queriesCsv(input, 16);
    gemini = await startFakeGemini({ handler: fakeAgent({ delayMs: 150 }) });
    const out = join(dir, "out");
    const db = join(dir, "pda.db");
    const env = { GEMINI_API_KEY: "dummy-key", GEMINI_BASE_URL: gemini.url };
    const args = ["batch", input, "--out", out, "--db", db, "--concurrency", "4"];
    child = pda(args, env);
    expect(await doneRows(db, 2)).toBeGreaterThanOrEqual(2);
    child.proc.kill("SIGINT");
    const stopped = await child.done;
    // 130, as a shell reports Ctrl-C, after the files of the rows done so far were written.
    expect(stopped.code).toBe(130);
    expect(stopped.stdout).toMatch(/^\d+\/16 queries done/m);
    expect(stopped.stderr).toMatch(
      /stopping: queries in flight are cancelled and kept for --resume \(again to exit now\)/,
    );
    const sq = new Database(db, { readonly: true });
    const left = (
      sq.prepare("SELECT count(*) AS n FROM batch_items WHERE status != 'done'").get() as { n: number }
    ).n;
    sq.close();
    expect(left).toBeGreaterThan(0);

    child = pda([...args, "--resume"], env);
    const r = await child.done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^16\/16 queries done, 16 succeeded, 16\/16 correct$/m);
  }, 120_000);

  it("memory is off by default: a second run of the same file does real steps; --memory only sees earlier runs", async () => {
    const input = join(dir, "queries.csv");
    const queries = queriesCsv(input, 3);
    const base = fakeAgent();
    // A model that trusts memory the way the issue saw it: shown a solved-before hit for its query, the first
    // perception declares the goal achieved with the remembered answer, so the session does no step.
    gemini = await startFakeGemini({
      handler: (req) => {
        const query = queryOf(req);
        const hit = new RegExp(`solved before[^:]*: "${escapeRegExp(query)}" → (\\d+)`).exec(req.userText);
        if (req.role === "perception" && hit && !/Mode: step_result/.test(req.userText)) {
          return {
            json: {
              entities: [],
              result_requirement: "the sum",
              original_goal_achieved: true,
              reasoning: "memory has the answer",
              local_goal_achieved: true,
              local_reasoning: "memory",
              last_tooluse_summary: "none",
              solution_summary: hit[1],
              confidence: 0.9,
            },
          };
        }
        return base(req);
      },
    });
    const db = join(dir, "pda.db");
    const env = { GEMINI_API_KEY: "dummy-key", GEMINI_BASE_URL: gemini.url };
    const run = async (out: string, ...extra: string[]) => {
      child = pda(["batch", input, "--out", join(dir, out), "--db", db, "--concurrency", "1", ...extra], env);
      const r = await child.done;
      expect(r.stderr).not.toMatch(/error/i);
      expect(r.code).toBe(0);
      const rows = readCsv(join(dir, out, "test_queries_output.csv")).rows;
      const state = BatchState.parse(JSON.parse(readFileSync(join(dir, out, "batch.json"), "utf8")));
      return { rows, state, summary: readFileSync(join(dir, out, "summary.md"), "utf8") };
    };

    const first = await run("first");
    const second = await run("second");
    for (const r of [first, second]) {
      expect(r.rows.map((x) => [x.Output, x.Steps, x["Tools Executed"]])).toEqual(
        queries.map((q) => [String(q.expected), "1", "add(success)"]),
      );
      expect(r.state.options).toMatchObject({ memory: false, memory_before: null });
      expect(r.summary).toMatch(/^- Memory: off/m);
    }

    // Opted in, the run sees the two runs before it (so the model above answers from memory, no step)...
    const third = await run("third", "--memory");
    expect(third.rows.map((x) => [x.Output, x.Steps, x["Tools Executed"]])).toEqual(
      queries.map((q) => [String(q.expected), "0", "No tools executed"]),
    );
    expect(third.state.options).toMatchObject({ memory: true, memory_before: third.state.created_at });
    expect(third.summary).toMatch(/^- Memory: on — past sessions created before .* never this run's own$/m);
    // ... never its own sessions, and the identical hits of the first two runs are merged into one line.
    const prompts = gemini.requests.filter(
      (r) => r.role === "perception" && /solved before/.test(r.userText),
    );
    expect(prompts.length).toBeGreaterThanOrEqual(3);
    for (const p of prompts) expect(p.userText).toMatch(/solved before \(2 sessions\): /);
  });
});
