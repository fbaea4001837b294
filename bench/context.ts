/**
 * Prompt size and wasted model calls, measured through the real loop, sandbox and math server. Prints JSON.
 *
 * 1. Decision-prompt tokens at steps 2, 10 and 20 of a long session (target: step 20 ≤ 2 × step 2).
 * 2. Model calls per solved task, guards on vs off, over a set where some first attempts call a misspelt
 *    tool, have a syntax error, or return an error disguised as a value.
 *
 * The model is a reactive stand-in written here: it answers from what the prompt shows (like a model that
 * follows feedback), so the two guard settings take the paths they really would. Run: node dist/bench/context.js
 */
import { AgentLoop } from "../agent/index.js";
import { Profile } from "../config/index.js";
import {
  distPath,
  nullRecorder,
  type DecisionOutput,
  type PerceptionSnapshot,
  type GenerateRequest,
  type GenerateResult,
  type ModelProvider,
} from "../core/index.js";
import { estimateTokens } from "../heuristics/index.js";
import { MultiMCP } from "../mcp_servers/index.js";

type Answer = (req: GenerateRequest<unknown>) => PerceptionSnapshot | DecisionOutput;

/** A model that answers with a function of the prompt; counts its calls and keeps the decision prompts. */
class Reactive implements ModelProvider {
  readonly provider = "bench";
  readonly model = "reactive";
  calls = 0;
  readonly decisionPrompts: string[] = [];
  constructor(private readonly answer: Answer) {}
  async generate<T>(req: GenerateRequest<T>): Promise<GenerateResult<T>> {
    this.calls++;
    if (req.role === "decision") this.decisionPrompts.push(`${req.system}\n${req.prompt}`);
    const value = req.schema.parse(this.answer(req as GenerateRequest<unknown>));
    return {
      value,
      raw: JSON.stringify(value),
      usage: { input_tokens: estimateTokens(req.system + req.prompt), output_tokens: 50 },
      latency_ms: 0,
      attempts: 1,
      provider: this.provider,
      model: this.model,
    };
  }
}

const snapshot = (achieved: boolean, local: boolean, summary: string): PerceptionSnapshot => ({
  entities: [],
  result_requirement: "the number asked for",
  original_goal_achieved: achieved,
  reasoning: achieved ? "the result answers the request" : "not yet",
  local_goal_achieved: local,
  local_reasoning: local ? "the step returned a value" : "the step failed",
  last_tooluse_summary: "math",
  solution_summary: achieved ? summary : "not ready yet",
  confidence: 0.8,
});

/** The value perception was shown for the step just run ("ok: <value>"), if it succeeded. */
const shownResult = (prompt: string) => /Its result:\nok: (.*)/.exec(prompt)?.[1];

// ---------- 1. prompt size over a 20-step session ----------

async function promptGrowth(hub: MultiMCP) {
  const STEPS = 20;
  const plan = Array.from({ length: STEPS }, (_, i) => `Step ${i}: add ${i} and 1, and log what was done`);
  let decided = 0;
  const model = new Reactive((req) => {
    if (req.role === "decision") {
      const i = decided++;
      return {
        plan_text: plan,
        step_index: i,
        description: `add ${i} and 1`,
        type: "CODE",
        code: `const r = await add(${i}, 1);\nconsole.log("step ${i}: " + "x".repeat(300));\nreturn { step: ${i}, value: r, detail: "${"y".repeat(400)}" };`,
      };
    }
    return snapshot(decided >= STEPS, true, "done");
  });
  const loop = new AgentLoop({
    models: { perception: model, decision: model },
    host: hub,
    recorder: nullRecorder,
    profile: Profile.parse({ budgets: { max_steps: STEPS + 1, max_llm_calls: 100 } }),
  });
  const s = await loop.run("Add numbers step by step and keep a log");
  if (s.status !== "succeeded") throw new Error(`long session ended ${s.status}: ${s.status_reason}`);
  // decisionPrompts[k] is the prompt that chose step k (0-based): "at step n" = the prompt deciding step n.
  const at = (n: number) => estimateTokens(model.decisionPrompts[n - 1]!);
  return {
    steps: s.steps.length,
    decision_prompt_tokens: { step_2: at(2), step_10: at(10), step_20: at(20) },
    ratio_20_to_2: +(at(20) / at(2)).toFixed(2),
    target_ratio: 2,
  };
}

// ---------- 2. model calls per solved task, guards on vs off ----------

interface Task {
  query: string;
  expected: string;
  /** The first attempt's code; null when the first attempt is right. */
  bad: string | null;
  good: string;
}

const TASKS: Task[] = [
  {
    query: "What is 6 times 7?",
    expected: "42",
    bad: "return await multiplyy(6, 7)",
    good: "return await multiply(6, 7)",
  },
  {
    query: "What is 2 to the 10th?",
    expected: "1024",
    bad: "return await pow(2, 10)",
    good: "return await power(2, 10)",
  },
  {
    query: "What is 100 minus 58?",
    expected: "42",
    bad: "return await substract(100, 58)",
    good: "return await subtract(100, 58)",
  },
  {
    query: "What is 9 plus 10?",
    expected: "19",
    bad: "return await ad(9, 10)",
    good: "return await add(9, 10)",
  },
  {
    query: "What is 81 divided by 9?",
    expected: "9",
    bad: "return await divide(81, 9",
    good: "return await divide(81, 9)",
  },
  {
    query: "What is 5 factorial?",
    expected: "120",
    bad: "const x = await factorial(5)\nreturn x +",
    good: "return await factorial(5)",
  },
  {
    query: "What is 3 cubed root of 27?",
    expected: "3",
    bad: 'return "Error: cbrt failed to load"',
    good: "return await cbrt(27)",
  },
  {
    query: "What is 12 times 12?",
    expected: "144",
    bad: 'return "Error: could not connect"',
    good: "return await multiply(12, 12)",
  },
  { query: "What is 7 plus 8?", expected: "15", bad: null, good: "return await add(7, 8)" },
  { query: "What is 20 minus 4?", expected: "16", bad: null, good: "return await subtract(20, 4)" },
];

async function guardsCost(hub: MultiMCP, guardsOn: boolean) {
  let calls = 0;
  let solved = 0;
  for (const task of TASKS) {
    const model = new Reactive((req) => {
      if (req.role === "decision") {
        // Like a model that follows feedback: once told the last step failed, it writes the right code.
        const told = /The last step failed/.test(req.prompt);
        const code = task.bad && !told ? task.bad : task.good;
        return {
          plan_text: ["Step 0: compute", "Step 1: answer"],
          step_index: 0,
          description: "compute",
          type: "CODE",
          code,
        };
      }
      // A credulous perception: any value that came back is taken as the answer.
      const shown = shownResult(req.prompt);
      return shown === undefined
        ? snapshot(false, false, "")
        : snapshot(true, true, shown.replace(/^"|"$/g, ""));
    });
    const loop = new AgentLoop({
      models: { perception: model, decision: model },
      host: hub,
      recorder: nullRecorder,
      profile: Profile.parse({ guards: { query: guardsOn, code: guardsOn, result: guardsOn } }),
    });
    const s = await loop.run(task.query);
    calls += model.calls;
    if (s.status === "succeeded" && s.state.final_answer === task.expected) solved++;
  }
  return {
    tasks: TASKS.length,
    solved,
    model_calls: calls,
    model_calls_per_solved_task: solved ? +(calls / solved).toFixed(2) : null,
  };
}

const hub = await MultiMCP.start({
  servers: [{ id: "math", command: process.execPath, args: [distPath("mcp_servers/math/server.js")] }],
});
try {
  const growth = await promptGrowth(hub);
  const on = await guardsCost(hub, true);
  const off = await guardsCost(hub, false);
  const out = {
    bench: "context",
    prompt_growth: { ...growth, meets_target: growth.ratio_20_to_2 <= 2 },
    guards: {
      on,
      off,
      calls_per_solved_ratio_on_vs_off:
        on.model_calls_per_solved_task && off.model_calls_per_solved_task
          ? +(on.model_calls_per_solved_task / off.model_calls_per_solved_task).toFixed(2)
          : null,
    },
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
} finally {
  await hub.close();
}
