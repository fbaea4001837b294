/**
 * Per-step overhead of the loop, model time excluded: a zero-latency scripted model, the real math server
 * over stdio, a real SQLite store (WAL) — everything a step costs except thinking. Prints JSON.
 *
 *   node dist/bench/loop.js [--sessions 200] [--steps 3]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { AgentLoop } from "../agent/index.js";
import { Profile } from "../config/index.js";
import { distPath, nullRecorder, percentile, type SessionRecorder } from "../core/index.js";
import { ScriptedTransport, StructuredProvider, type ModelProvider } from "../llm/index.js";
import { MultiMCP } from "../mcp_servers/index.js";
import { SessionStore } from "../memory/index.js";

const { values } = parseArgs({
  options: { sessions: { type: "string", default: "200" }, steps: { type: "string", default: "3" } },
});
const sessions = Number(values.sessions);
const steps = Number(values.steps);

const snap = (done: boolean) => ({
  entities: ["1"],
  result_requirement: "a number",
  original_goal_achieved: done,
  reasoning: "r",
  local_goal_achieved: true,
  local_reasoning: "ok",
  last_tooluse_summary: "add",
  solution_summary: done ? "done" : "not ready yet",
  confidence: 0.9,
});
const plan = Array.from({ length: steps }, (_, i) => `Step ${i}: add`);

function script() {
  const perception = [];
  const decision = [];
  for (let s = 0; s < sessions; s++) {
    perception.push(snap(false));
    for (let i = 0; i < steps; i++) {
      decision.push({
        plan_text: plan,
        step_index: i,
        description: "add",
        type: "CODE",
        code: `return await add(${i}, 1)`,
      });
      perception.push(snap(i === steps - 1));
    }
  }
  return { perception, decision };
}

/** Times spent inside the model, so it can be subtracted. */
function timed(model: ModelProvider): { model: ModelProvider; ms: () => number } {
  let total = 0;
  return {
    ms: () => total,
    model: {
      provider: model.provider,
      model: model.model,
      async generate(req) {
        const t = performance.now();
        try {
          return await model.generate(req);
        } finally {
          total += performance.now() - t;
        }
      },
    },
  };
}

async function measure(hub: MultiMCP, recorder: SessionRecorder) {
  const t = timed(new StructuredProvider(new ScriptedTransport(script())));
  const loop = new AgentLoop({
    models: { perception: t.model, decision: t.model },
    host: hub,
    recorder,
    profile: Profile.parse({}),
  });
  const perStep: number[] = [];
  for (let i = 0; i < sessions; i++) {
    const before = t.ms();
    const start = performance.now();
    const s = await loop.run(`session ${i}`);
    if (s.status !== "succeeded" || s.steps.length !== steps)
      throw new Error(`bench session ${i} ended ${s.status}`);
    perStep.push((performance.now() - start - (t.ms() - before)) / steps);
  }
  perStep.sort((a, b) => a - b);
  const q = (p: number) => +percentile(perStep, p).toFixed(3);
  return { median_ms: q(0.5), p90_ms: q(0.9) };
}

const dir = mkdtempSync(join(tmpdir(), "pda-bench-loop-"));
const hub = await MultiMCP.start({
  servers: [{ id: "math", command: process.execPath, args: [distPath("mcp_servers/math/server.js")] }],
});
try {
  const store = SessionStore.open(join(dir, "bench.db"));
  await measure(hub, nullRecorder); // warm-up: JIT, wasm, server
  const withSqlite = await measure(hub, store);
  const noStore = await measure(hub, nullRecorder);
  store.close();
  const out = {
    bench: "loop",
    sessions,
    steps_per_session: steps,
    per_step_overhead_ms: withSqlite,
    per_step_overhead_without_sqlite_ms: noStore,
    sqlite_share: +(1 - noStore.median_ms / withSqlite.median_ms).toFixed(3),
    target_ms: 3,
    meets_target: withSqlite.median_ms < 3,
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
} finally {
  await hub.close();
  rmSync(dir, { recursive: true, force: true });
}
