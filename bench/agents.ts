/**
 * Sub-agents: what a call costs beyond the model, and whether parallel calls overlap. A scripted model that
 * takes `--model-ms` per turn (a network model's latency), the real math server over stdio, a real SQLite
 * store. Per session, the root's one CODE step does four additions:
 * - direct: the root calls `add` four times (baseline: no sub-agents);
 * - sequential: it calls four sub-agents one after another, each doing one `add` and reporting;
 * - parallel: the same four sub-agents in `parallel([...])`.
 * Prints JSON: median ms per session, the overhead per sub-agent call beyond its two model turns, and
 * parallel / sequential (1/4 would be perfect overlap).
 *
 *   node dist/bench/agents.js [--sessions 5] [--model-ms 40]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { AgentTeam, parseAgentsConfig, type LoopDeps } from "../agent/index.js";
import { Profile } from "../config/index.js";
import { distPath, type RawCompletion, type RawTurn } from "../core/index.js";
import { ScriptedTransport, StructuredProvider, type Script, type Transport } from "../llm/index.js";
import { MultiMCP } from "../mcp_servers/index.js";
import { SessionStore } from "../memory/index.js";

const { values } = parseArgs({
  options: { sessions: { type: "string", default: "5" }, "model-ms": { type: "string", default: "40" } },
});
const sessions = Number(values.sessions);
const modelMs = Number(values["model-ms"]);
const N = 4;

class SlowTransport implements Transport {
  readonly provider = "scripted";
  readonly model = "slow";
  constructor(private readonly inner: ScriptedTransport) {}
  async complete(turn: RawTurn): Promise<RawCompletion> {
    await sleep(modelMs);
    return this.inner.complete(turn);
  }
}

const snap = (done: boolean) => ({
  entities: [],
  result_requirement: "four sums",
  original_goal_achieved: done,
  reasoning: "r",
  local_goal_achieved: done,
  local_reasoning: "r",
  last_tooluse_summary: "none",
  solution_summary: done ? "done" : "not ready yet",
  confidence: 0.9,
});
const step = (code: string) => ({
  plan_text: ["Step 0: add"],
  step_index: 0,
  description: "add",
  type: "CODE",
  code,
});
const names = Array.from({ length: N }, (_, i) => `a${i}`);
const YAML = `agents:\n  root: { description: root, tools: [math.add], subagents: [${names.join(", ")}] }\n${names
  .map((n) => `  ${n}: { description: adds, tools: [math.add] }`)
  .join("\n")}\n`;

function script(kind: "direct" | "sequential" | "parallel"): Script {
  const calls = names.map((n, i) => `agents.${n}({task: "add ${i} and 1"})`);
  const code =
    kind === "direct"
      ? `const out = []; for (let i = 0; i < ${N}; i++) out.push(await add(i, 1)); return out;`
      : kind === "sequential"
        ? `const out = []; ${calls.map((c) => `out.push((await ${c}).result);`).join(" ")} return out;`
        : `return (await parallel([${calls.map((c) => `() => ${c}`).join(", ")}])).map((r) => r.result);`;
  const s: Script = { perception: [], decision: [] };
  for (let k = 0; k < sessions; k++) {
    s.perception!.push(snap(false), snap(true));
    s.decision!.push(step(code));
    if (kind === "direct") continue;
    names.forEach((n, i) => {
      (s[`${n}.perception`] ??= []).push(snap(false));
      (s[`${n}.decision`] ??= []).push(
        step(
          `await agent.report({success: true, error_code: "NONE", reason: "added", result: await add(${i}, 1)});`,
        ),
      );
    });
  }
  return s;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "pda-bench-agents-"));
  const hub = await MultiMCP.start({
    servers: [{ id: "math", command: process.execPath, args: [distPath("mcp_servers/math/server.js")] }],
  });
  const store = SessionStore.open(join(dir, "pda.db"));
  try {
    const config = parseAgentsConfig("bench-agents.yaml", YAML);
    const out: Record<string, number> = {};
    for (const kind of ["direct", "sequential", "parallel"] as const) {
      const transport = new ScriptedTransport(script(kind));
      const model = new StructuredProvider(new SlowTransport(transport));
      const base: LoopDeps = {
        models: { perception: model, decision: model },
        host: hub,
        recorder: store,
        profile: Profile.parse({ memory_hits: 0 }),
      };
      const team = new AgentTeam({ config });
      const times: number[] = [];
      for (let k = 0; k < sessions; k++) {
        const t0 = performance.now();
        const s = await team.loop("root", base).run("four additions");
        times.push(performance.now() - t0);
        if (s.status !== "succeeded") throw new Error(`${kind}: ${s.status} ${s.status_reason ?? ""}`);
      }
      const left = transport.unconsumed();
      if (Object.keys(left).length) throw new Error(`${kind}: unplayed turns ${JSON.stringify(left)}`);
      out[`${kind}_ms`] = Math.round(median(times));
    }
    // A sub-agent call is two model turns (perceive the task, decide the step) plus everything else.
    const perCall = (out.sequential_ms! - out.direct_ms!) / N - 2 * modelMs;
    process.stdout.write(
      `${JSON.stringify(
        {
          sessions,
          model_ms_per_turn: modelMs,
          sub_agents_per_session: N,
          ...out,
          overhead_ms_per_sub_agent_call: Math.round(perCall),
          parallel_over_sequential: Number((out.parallel_ms! / out.sequential_ms!).toFixed(3)),
          ideal_parallel_over_sequential: Number(
            ((out.direct_ms! + 2 * modelMs + perCall) / out.sequential_ms!).toFixed(3),
          ),
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await hub.close();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
