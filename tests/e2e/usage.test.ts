/**
 * What a session spends, through `pda run` against the fake Gemini and OpenAI servers (the real clients), the
 * real math server and a real SQLite file: a reply cut off or blocked was paid for, so its tokens and cost go
 * into the session's usage, its llm_calls row and the budgets.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { stringify } from "yaml";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { distPath } from "../../core/index.js";
import {
  startFakeGemini,
  startFakeOpenAI,
  type FakeGemini,
  type FakeGeminiReply,
  type FakeOpenAI,
  type FakeOpenAIReply,
} from "../../testing/index.js";

const QUERY = "What is 32 + 5";

function perception(achieved: boolean) {
  return {
    entities: ["32", "5"],
    result_requirement: "the sum",
    original_goal_achieved: achieved,
    reasoning: achieved ? "the tool computed 37" : "nothing computed yet",
    local_goal_achieved: achieved,
    local_reasoning: achieved ? "the step returned 37" : "no step yet",
    last_tooluse_summary: achieved ? "add" : "none",
    solution_summary: achieved ? "37" : "not ready yet",
    confidence: achieved ? 0.95 : 0.5,
  };
}

const DECISION = {
  plan_text: ["Step 0: add 32 and 5", "Step 1: answer"],
  step_index: 0,
  description: "add 32 and 5",
  type: "CODE",
  code: "return await add(32, 5);",
};

/** The agent's model on every turn a test does not cut off or block: 130 tokens a perception, 260 a decision. */
function normal(role: string | undefined, userText: string) {
  if (role === "perception") {
    const sawResult = /Mode: step_result/.test(userText) && /ok: 37\b/.test(userText);
    return { json: perception(sawResult), usage: { input: 100, output: 30 } };
  }
  return { json: DECISION, usage: { input: 200, output: 60 } };
}

/** `reply` for the first turn of `role`, normal answers otherwise. */
function firstOf<R>(role: string, reply: R) {
  let seen = 0;
  return (r: string | undefined, userText: string) =>
    r === role && ++seen === 1 ? reply : normal(r, userText);
}

interface Call {
  role: string;
  ok: number;
  input_tokens: number;
  output_tokens: number;
  attempts: number;
  cost_usd: number | null;
  error: string | null;
  finish_reason: string | null;
}

describe("pda run: replies cut off or blocked are paid for", () => {
  let dir: string;
  let config: string;
  let gemini: FakeGemini | undefined;
  let openai: FakeOpenAI | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "pda-e2e-usage-"));
    config = join(dir, "config");
    mkdirSync(config);
    writeFileSync(
      join(config, "mcp_server_config.yaml"),
      stringify({
        servers: [{ id: "math", command: process.execPath, args: [distPath("mcp_servers/math/server.js")] }],
      }),
    );
    configure({});
  });
  afterEach(async () => {
    await gemini?.close();
    await openai?.close();
    gemini = openai = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  /** The profile's budgets, and model prices (else the bundled models.yaml's). */
  function configure(budgets: Record<string, number>, costs?: Record<string, unknown>) {
    writeFileSync(join(config, "profiles.yaml"), stringify({ default: "t", profiles: { t: { budgets } } }));
    if (costs) writeFileSync(join(config, "models.yaml"), stringify({ costs }));
  }

  async function run(args: string[], env: Record<string, string>) {
    const r = await new Promise<{ stdout: string; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        [
          distPath("main.js"),
          "--config",
          config,
          "--db",
          join(dir, "pda.db"),
          "run",
          QUERY,
          "--json",
          ...args,
        ],
        { env: { PATH: process.env.PATH ?? "", HOME: dir, NO_COLOR: "1", ...env }, timeout: 60_000 },
        (_err, stdout, stderr) => resolve({ stdout, stderr }),
      ),
    );
    expect(r.stderr).toBe("");
    return JSON.parse(r.stdout) as Record<string, unknown> & { session_id: string };
  }

  function llmCalls(sessionId: string): Call[] {
    const db = new Database(join(dir, "pda.db"), { readonly: true });
    try {
      return db
        .prepare(
          "SELECT role, ok, input_tokens, output_tokens, attempts, cost_usd, error, finish_reason FROM llm_calls WHERE session_id = ? ORDER BY id",
        )
        .all(sessionId) as Call[];
    } finally {
      db.close();
    }
  }

  async function withGemini(answer: (role: string | undefined, userText: string) => FakeGeminiReply) {
    gemini = await startFakeGemini({ handler: (req) => answer(req.role, req.userText) });
    return { GEMINI_API_KEY: "k", GEMINI_BASE_URL: gemini.url };
  }

  async function withOpenAI(answer: (role: string | undefined, userText: string) => FakeOpenAIReply) {
    const roles: Record<string, string> = { PerceptionSnapshot: "perception", DecisionOutput: "decision" };
    openai = await startFakeOpenAI({
      handler: (req) => answer(roles[req.body.response_format?.json_schema?.name ?? ""], req.userText),
    });
    return { OPENAI_BASE_URL: openai.url };
  }

  it("Gemini MAX_TOKENS: the cut-off reply's tokens are in the session's usage and its llm_calls row", async () => {
    const cut = {
      text: '{"entities": ["32", "',
      finishReason: "MAX_TOKENS",
      usage: { input: 500, output: 4000 },
    };
    const summary = await run([], await withGemini(firstOf("perception", cut)));
    expect(summary).toMatchObject({ status: "succeeded", final_answer: "37", llm_calls: 4 });
    const calls = llmCalls(summary.session_id);
    expect(calls.map((c) => [c.role, c.ok, c.input_tokens, c.output_tokens, c.attempts])).toEqual([
      ["perception", 0, 500, 4000, 1],
      ["perception", 1, 100, 30, 1],
      ["decision", 1, 200, 60, 1],
      ["perception", 1, 100, 30, 1],
    ]);
    expect(calls[0]!.error).toMatch(
      /^MODEL_TRUNCATED: gemini:gemini-flash-latest hit its output token limit/,
    );
    // The @google/genai client's finishReason, stored verbatim with each call (the cut-off one too).
    expect(calls.map((c) => c.finish_reason)).toEqual(["MAX_TOKENS", "STOP", "STOP", "STOP"]);
    expect(summary.tokens).toBe(4500 + 130 + 260 + 130);
    // Priced by the bundled models.yaml (gemini-flash-latest: $0.5 in, $3 out per million tokens).
    expect(summary.cost_usd).toBeCloseTo((900 * 0.5 + 4120 * 3) / 1e6, 6);
    // Each call's cost is stored with it, and the calls add up to the session's.
    expect(calls.map((c) => c.cost_usd)).toEqual(
      calls.map((c) => (c.input_tokens * 0.5 + c.output_tokens * 3) / 1e6),
    );
    expect(calls.reduce((n, c) => n + c.cost_usd!, 0)).toBeCloseTo(summary.cost_usd as number, 6);
  });

  it("Gemini MAX_TOKENS: the cut-off reply uses up the token budget", async () => {
    // The whole session takes 520 tokens; the cut-off reply alone 1200.
    configure({ max_tokens: 1000 });
    const cut = { text: "{", finishReason: "MAX_TOKENS", usage: { input: 200, output: 1000 } };
    const summary = await run([], await withGemini(firstOf("perception", cut)));
    expect(summary).toMatchObject({
      status: "budget_exhausted",
      status_reason: "reached the token budget (1000 tokens)",
      llm_calls: 1,
      tokens: 1200,
    });
  });

  it("Gemini SAFETY: the blocked decision's tokens are counted though the session fails on it", async () => {
    const blocked = { text: "", finishReason: "SAFETY", usage: { input: 700, output: 5 } };
    const summary = await run([], await withGemini(firstOf("decision", blocked)));
    expect(summary).toMatchObject({ status: "failed", llm_calls: 2, tokens: 130 + 705 });
    expect(summary.status_reason).toMatch(/stopped its answer \(finishReason SAFETY\)/);
    const calls = llmCalls(summary.session_id);
    expect(calls.map((c) => [c.role, c.ok, c.input_tokens, c.output_tokens])).toEqual([
      ["perception", 1, 100, 30],
      ["decision", 0, 700, 5],
    ]);
    expect(calls[1]!.error).toMatch(/^MODEL_BLOCKED: /);
    expect(calls.map((c) => c.finish_reason)).toEqual(["STOP", "SAFETY"]);
  });

  it("OpenAI finish_reason length: the cut-off reply's cost uses up the cost budget", async () => {
    // $1 in, $10 out per million tokens: the cut-off reply costs $0.011, the whole session $0.0016.
    configure({ max_cost_usd: 0.01 }, { m: { input_per_mtok: 1, output_per_mtok: 10 } });
    const cut = { text: '{"entities": [', finishReason: "length", usage: { input: 1000, output: 1000 } };
    const summary = await run(["--model", "openai:m"], await withOpenAI(firstOf("perception", cut)));
    expect(summary).toMatchObject({
      status: "budget_exhausted",
      llm_calls: 1,
      tokens: 2000,
      cost_usd: 0.011,
    });
    expect(summary.status_reason).toMatch(/^reached the cost budget \(\$0\.01\)/);
    expect(
      llmCalls(summary.session_id).map((c) => [c.ok, c.input_tokens, c.output_tokens, c.finish_reason]),
    ).toEqual([[0, 1000, 1000, "length"]]);
  });

  it("OpenAI content_filter: the filtered decision's tokens and cost are counted", async () => {
    configure({}, { m: { input_per_mtok: 1, output_per_mtok: 10 } });
    const filtered = { text: "", finishReason: "content_filter", usage: { input: 900, output: 40 } };
    const summary = await run(["--model", "openai:m"], await withOpenAI(firstOf("decision", filtered)));
    expect(summary).toMatchObject({ status: "failed", llm_calls: 2, tokens: 130 + 940 });
    expect(summary.cost_usd).toBeCloseTo((1000 * 1 + 70 * 10) / 1e6, 6);
    expect(summary.status_reason).toMatch(/finish_reason content_filter/);
    const calls = llmCalls(summary.session_id);
    expect(calls.map((c) => [c.role, c.ok, c.input_tokens, c.output_tokens, c.cost_usd])).toEqual([
      ["perception", 1, 100, 30, (100 + 300) / 1e6],
      ["decision", 0, 900, 40, (900 + 400) / 1e6],
    ]);
    // The openai client's choice.finish_reason, stored verbatim with each call.
    expect(calls.map((c) => c.finish_reason)).toEqual(["stop", "content_filter"]);
  });
});
