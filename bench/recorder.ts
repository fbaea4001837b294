/**
 * What one recorder write costs, by kind. Replays the writes the loop makes for a session — its start, the
 * first perception, then per CODE step: decision model call, step begun, plan version, tool call, step result,
 * step finished, perception model call, snapshot; and its finish — against a SessionStore on a file. In the
 * same run it writes the same rows with bare better-sqlite3 (same schema and pragmas, statements prepared
 * once, parameters built beforehand, one IMMEDIATE transaction per write, no session row touched) as the
 * floor. Store and bare sessions alternate, so noise falls on both. Prints JSON.
 *
 *   node dist/bench/recorder.js [--sessions 400] [--steps-per-session 5] [--secrets 8] [--prompt-kb 6]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import type Database from "better-sqlite3";
import {
  newSession,
  type LlmCallRecord,
  type PerceptionSnapshot,
  type PlanVersion,
  type SnapshotRecord,
  type Step,
  type ToolCallRecord,
} from "../core/index.js";
import { SessionStore } from "../memory/index.js";
import { openDatabase } from "../memory/db.js";

const { values } = parseArgs({
  options: {
    sessions: { type: "string", default: "400" },
    "steps-per-session": { type: "string", default: "5" },
    secrets: { type: "string", default: "8" },
    "prompt-kb": { type: "string", default: "6" },
  },
});
const SESSIONS = Number(values.sessions);
const SECRETS = Number(values.secrets);
const PROMPT_CHARS = Number(values["prompt-kb"]) * 1024;
const STEPS_PER_SESSION = Number(values["steps-per-session"]);

// ---- a realistic step's records ----

// Secret-looking environment variables, as a developer's shell has them (none occurs in the texts).
const env: NodeJS.ProcessEnv = {};
const PREFIXES = ["sk-proj-", "ghp_", "AKIA", "xoxb-", "AIza", "glpat-", "sk-ant-api03-", ""];
for (let i = 0; i < SECRETS; i++) {
  env[`SERVICE_${i}_API_KEY`] = `${PREFIXES[i % PREFIXES.length]}${i}Xq7Lm9Tz2Wv5Rb8Nc4Hd6Kp3Jf1`;
}

const filler = (chars: number, seed: number): string => {
  const words = ["the", "tool", "returns", "a", "number", "plan", "step", "result", "query", "add", "sum"];
  let out = "";
  for (let i = seed; out.length < chars; i++) out += `${words[(i * 7) % words.length]} `;
  return out.slice(0, chars);
};
const prompt = (role: string, i: number) =>
  `You are the ${role} of an agent.\n## Tools\n${filler(PROMPT_CHARS / 2, i)}\n## History\n` +
  JSON.stringify({ step: i, notes: filler(PROMPT_CHARS / 2 - 60, i + 1) });

// As prompts/perception asks: the requirement stays, the summary is "not ready yet" until the goal is met.
const snapshot = (i: number, done: boolean): PerceptionSnapshot => ({
  entities: ["32", "5", `entity${i}`],
  result_requirement: "The sum of the ASCII values of INDIA, as a number",
  original_goal_achieved: done,
  reasoning: `Step ${i} returned a partial sum; ${filler(300, i)}`,
  local_goal_achieved: true,
  local_reasoning: "the tool returned a number",
  last_tooluse_summary: `add returned ${i * 7}`,
  solution_summary: done ? "The sum is 1130" : "not ready yet",
  confidence: done ? 0.9 : 0.6,
});

const llm = (role: string, i: number, value: unknown): LlmCallRecord => {
  const raw = JSON.stringify(value, null, 2);
  return {
    role,
    provider: "openai",
    model: "gpt-4o-mini",
    ok: true,
    input_tokens: 1500,
    output_tokens: 300,
    latency_ms: 900,
    attempts: 1,
    cost_usd: 0.0004,
    prompt: prompt(role, i),
    raw_response: raw,
    value,
    started_at: new Date().toISOString(),
  };
};

const toolCall = (): ToolCallRecord => ({
  server: "math",
  tool: "add",
  ok: true,
  latency_ms: 0.8,
  bytes: 24,
  started_at: new Date().toISOString(),
});

type Rec = Pick<
  SessionStore,
  | "startSession"
  | "recordLlmCall"
  | "saveSnapshot"
  | "savePlanVersion"
  | "saveStep"
  | "recordToolCall"
  | "finishSession"
>;
interface Write {
  kind: string;
  to: (r: Rec) => void;
}

/**
 * One session's writes in the loop's order: start, perception and snapshot of the query, the decision and its
 * plan, then per step the writes of a CODE step, and the finish. Records are built here, before any clock
 * starts; each write only hands them to a recorder.
 */
function sessionWrites(id: string): Write[] {
  const s = newSession(
    "Find the ASCII values of the characters in INDIA and return the sum of their exponentials",
    id,
    new Date().toISOString(),
    { agent: "bench" },
  );
  const started = structuredClone(s);
  const out: Write[] = [{ kind: "start_session", to: (r) => r.startSession(started) }];
  const llmCall = (role: string, i: number, value: unknown) => {
    const rec = llm(role, i, value);
    out.push({ kind: "llm_call", to: (r) => r.recordLlmCall(id, rec) });
  };
  const perceive = (i: number, stepIndex?: number) => {
    const snap = snapshot(i, i === STEPS_PER_SESSION);
    llmCall("perception", i, snap);
    const record: SnapshotRecord = {
      index: s.snapshots.length,
      snapshot_type: stepIndex === undefined ? "user_query" : "step_result",
      snapshot: snap,
      step_index: stepIndex,
      created_at: new Date().toISOString(),
    };
    s.snapshots.push(record);
    s.state.solution_summary = snap.solution_summary;
    out.push({ kind: "snapshot", to: (r) => r.saveSnapshot(id, record) });
  };
  const plan: PlanVersion = {
    version: 1,
    plan_text: Array.from({ length: STEPS_PER_SESSION }, (_, k) => `Step ${k}: compute part ${k} of the sum`),
    steps: [],
    reason: "initial",
    triggered_by: "snapshot:0",
    created_at: new Date().toISOString(),
  };
  perceive(0);
  for (let i = 0; i < STEPS_PER_SESSION; i++) {
    const code = `const codes = "INDIA".split("").map((c) => c.charCodeAt(0));\nconst r = await add(${i}, 1);\nreturn { codes, r };`;
    const description = `compute part ${i} of the sum`;
    llmCall("decision", i, { plan_text: plan.plan_text, step_index: i, description, type: "CODE", code });
    if (i === 0) {
      s.plan_versions.push(plan);
      const first = structuredClone(plan);
      out.push({ kind: "plan_version", to: (r) => r.savePlanVersion(id, first) });
    }
    const step: Step = {
      index: i,
      plan_step: i,
      description,
      type: "CODE",
      code,
      status: "pending",
      attempts: 0,
      plan_version: plan.version,
    };
    s.steps.push(step);
    plan.steps.push(i);
    const begun = structuredClone(step);
    const planNow = structuredClone(plan);
    out.push({ kind: "step_begin", to: (r) => r.saveStep(id, begun) });
    out.push({ kind: "plan_version", to: (r) => r.savePlanVersion(id, planNow) });
    const tc = toolCall();
    out.push({ kind: "tool_call", to: (r) => r.recordToolCall(id, i, tc) });
    s.usage.tool_calls++;
    step.attempts = 1;
    step.execution_result = {
      ok: true,
      value: { codes: [73, 78, 68, 73, 65], r: i + 1, note: filler(200, i) },
      logs: ["codes computed", `add -> ${i + 1}`],
      tool_calls: [tc],
      duration_ms: 3.2,
    };
    const result = structuredClone(step);
    out.push({ kind: "step_result", to: (r) => r.saveStep(id, result) });
    step.status = "completed";
    const finished = structuredClone(step);
    out.push({ kind: "step_finish", to: (r) => r.saveStep(id, finished) });
    perceive(i + 1, i);
  }
  s.status = "succeeded";
  s.state.final_answer = "1130";
  s.state.original_goal_achieved = true;
  s.state.confidence = 0.9;
  s.usage.llm_calls = 2 * STEPS_PER_SESSION + 1;
  const final = structuredClone(s);
  out.push({ kind: "finish_session", to: (r) => r.finishSession(final) });
  return out;
}

// ---- the floor: the same rows with bare better-sqlite3 ----

/**
 * The same rows written with one prepared statement each, in its own IMMEDIATE transaction, and nothing else
 * (no redaction, no session row touched). Calling a method of `rec` builds the parameters; `take()` returns
 * the write itself, to be timed.
 */
function bareRecorder(db: Database.Database): { rec: Rec; take: () => () => void } {
  const begin = db.prepare("BEGIN IMMEDIATE");
  const commit = db.prepare("COMMIT");
  let pending: (() => void) | undefined;
  const one = (s: Database.Statement, args: unknown[]) => {
    pending = () => {
      begin.run();
      s.run(...args);
      commit.run();
    };
  };
  const session = db.prepare(
    `INSERT INTO sessions (id, agent, original_query, status, created_at, updated_at, session_json)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const finish = db.prepare(
    `UPDATE sessions SET status = ?, final_answer = ?, solution_summary = ?, confidence = ?,
      original_goal_achieved = ?, llm_calls = ?, tool_calls = ?, updated_at = ?, finished_at = ?,
      session_json = ? WHERE id = ?`,
  );
  const llmCall = db.prepare(
    `INSERT INTO llm_calls (session_id, role, provider, model, ok, input_tokens, output_tokens, latency_ms,
      attempts, prompt, prompt_bytes, raw_response, raw_response_bytes, value_json, error, started_at, ord)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const stepRow = db.prepare(
    `INSERT INTO steps (session_id, idx, plan_version, type, description, status, attempts, code, conclusion,
      question, result_ok, result_json, result_bytes, result_truncated, error_code, error_message, created_at,
      updated_at, ord, record_json)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT(session_id, idx) DO UPDATE SET status = excluded.status, attempts = excluded.attempts,
      result_ok = excluded.result_ok, result_json = excluded.result_json, result_bytes = excluded.result_bytes,
      updated_at = excluded.updated_at, record_json = excluded.record_json`,
  );
  const planRow = db.prepare(
    `INSERT INTO plan_versions (session_id, version, reason, triggered_by, plan_text, created_at, ord, record_json)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT(session_id, version) DO UPDATE SET record_json = excluded.record_json`,
  );
  const tool = db.prepare(
    `INSERT INTO tool_calls (session_id, step_index, server, tool, ok, error_kind, error_message, latency_ms,
      bytes, started_at, ord) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const snap = db.prepare(
    `INSERT INTO snapshots (session_id, idx, snapshot_type, step_index, result_requirement, solution_summary,
      original_goal_achieved, confidence, created_at, ord, record_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  let ord = 0;
  const now = () => new Date().toISOString();
  const rec: Rec = {
    startSession: (s) =>
      one(session, [
        s.session_id,
        s.agent,
        s.original_query,
        s.status,
        s.created_at,
        now(),
        JSON.stringify(s),
      ]),
    finishSession: (s) =>
      one(finish, [
        s.status,
        s.state.final_answer,
        s.state.solution_summary,
        s.state.confidence,
        1,
        s.usage.llm_calls,
        s.usage.tool_calls,
        now(),
        now(),
        JSON.stringify(s),
        s.session_id,
      ]),
    recordLlmCall: (id, r) =>
      one(llmCall, [
        id,
        r.role,
        r.provider,
        r.model,
        1,
        r.input_tokens,
        r.output_tokens,
        r.latency_ms,
        r.attempts,
        r.prompt,
        r.prompt.length,
        r.raw_response,
        r.raw_response.length,
        JSON.stringify(r.value),
        null,
        r.started_at,
        ++ord,
      ]),
    saveStep: (id, s) => {
      const r = s.execution_result;
      const value = r ? JSON.stringify(r.value) : null;
      const t = now();
      one(stepRow, [
        id,
        s.index,
        s.plan_version,
        s.type,
        s.description,
        s.status,
        s.attempts,
        s.code ?? null,
        null,
        null,
        r ? 1 : null,
        value,
        value?.length ?? null,
        0,
        null,
        null,
        t,
        t,
        ++ord,
        JSON.stringify(s),
      ]);
    },
    savePlanVersion: (id, p) =>
      one(planRow, [
        id,
        p.version,
        p.reason,
        p.triggered_by,
        p.plan_text.join("\n"),
        p.created_at,
        ++ord,
        JSON.stringify(p),
      ]),
    recordToolCall: (id, stepIndex, t) =>
      one(tool, [id, stepIndex, t.server, t.tool, 1, null, null, t.latency_ms, t.bytes, t.started_at, ++ord]),
    saveSnapshot: (id, r) =>
      one(snap, [
        id,
        r.index,
        r.snapshot_type,
        r.step_index ?? null,
        r.snapshot.result_requirement,
        r.snapshot.solution_summary,
        0,
        r.snapshot.confidence,
        r.created_at,
        ++ord,
        JSON.stringify(r),
      ]),
  };
  return {
    rec,
    take: () => {
      const w = pending!;
      pending = undefined;
      return w;
    },
  };
}

// ---- run ----

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * q))]!;
};
const us = (ms: number) => Math.round(ms * 10_000) / 10;

const dir = mkdtempSync(join(tmpdir(), "pda-bench-recorder-"));
try {
  const store = SessionStore.open(join(dir, "store.db"), { env });
  const bareDb = openDatabase(join(dir, "bare.db"));
  const bare = bareRecorder(bareDb);
  const times = { store: new Map<string, number[]>(), bare: new Map<string, number[]>() };
  const perStep = { store: [] as number[], bare: [] as number[] };
  const add = (m: Map<string, number[]>, kind: string, ms: number) =>
    (m.get(kind) ?? m.set(kind, []).get(kind)!).push(ms);

  const runStore = (n: number, record: boolean) => {
    const writes = sessionWrites(`s${n}`);
    let total = 0;
    for (const w of writes) {
      const t = performance.now();
      w.to(store);
      const ms = performance.now() - t;
      total += ms;
      if (record) add(times.store, w.kind, ms);
    }
    if (record) perStep.store.push(total / STEPS_PER_SESSION);
  };
  const runBare = (n: number, record: boolean) => {
    const writes = sessionWrites(`b${n}`).map((w) => {
      w.to(bare.rec);
      return { kind: w.kind, run: bare.take() };
    });
    let total = 0;
    for (const w of writes) {
      const t = performance.now();
      w.run();
      const ms = performance.now() - t;
      total += ms;
      if (record) add(times.bare, w.kind, ms);
    }
    if (record) perStep.bare.push(total / STEPS_PER_SESSION);
  };

  const warm = Math.max(10, Math.floor(SESSIONS / 10));
  for (let n = 0; n < warm + SESSIONS; n++) {
    const record = n >= warm;
    if (n % 2 === 0) {
      runStore(n, record);
      runBare(n, record);
    } else {
      runBare(n, record);
      runStore(n, record);
    }
  }
  store.close();
  bareDb.close();

  const perWrite = Object.fromEntries(
    [...times.store.keys()].map((k) => {
      const s = times.store.get(k)!;
      const b = times.bare.get(k)!;
      return [
        k,
        {
          n: s.length,
          store_median_us: us(quantile(s, 0.5)),
          bare_median_us: us(quantile(b, 0.5)),
          ratio: +(quantile(s, 0.5) / quantile(b, 0.5)).toFixed(2),
          store_p90_us: us(quantile(s, 0.9)),
          bare_p90_us: us(quantile(b, 0.9)),
        },
      ];
    }),
  );
  const stepStore = quantile(perStep.store, 0.5);
  const stepBare = quantile(perStep.bare, 0.5);
  process.stdout.write(
    `${JSON.stringify(
      {
        bench: "recorder",
        node: process.version,
        cpus: cpus().length,
        load_average_1m: Math.round(loadavg()[0]! * 10) / 10,
        sessions: SESSIONS,
        steps_per_session: STEPS_PER_SESSION,
        secrets: SECRETS,
        prompt_chars: PROMPT_CHARS,
        per_write: perWrite,
        // Every write of a session (start and finish included) divided by its steps, median over sessions.
        per_step: {
          writes:
            [...times.store.values()].reduce((n, xs) => n + xs.length, 0) / SESSIONS / STEPS_PER_SESSION,
          store_median_us: us(stepStore),
          bare_median_us: us(stepBare),
          ratio: +(stepStore / stepBare).toFixed(2),
        },
      },
      null,
      2,
    )}\n`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
