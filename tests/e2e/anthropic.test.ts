/**
 * `pda run --model anthropic:<model>` end to end: the real @anthropic-ai/sdk in a `pda` child process against
 * the fake Messages API (which refuses what the real API refuses), the real math server and a real SQLite file.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { stringify } from "yaml";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { distPath } from "../../core/index.js";
import { startFakeAnthropic, type FakeAnthropic, type FakeAnthropicRequest } from "../../testing/index.js";

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

/** The agent's model: 130 tokens a perception, 260 a decision. */
function answer(req: FakeAnthropicRequest) {
  if (req.role === "perception") {
    const sawResult = /Mode: step_result/.test(req.userText) && /ok: 37\b/.test(req.userText);
    return { json: perception(sawResult), thinking: "check the result", usage: { input: 100, output: 30 } };
  }
  return { json: DECISION, usage: { input: 200, output: 60 } };
}

describe("pda run with the anthropic provider", () => {
  let dir: string;
  let config: string;
  let fake: FakeAnthropic | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "pda-e2e-anthropic-"));
    config = join(dir, "config");
    mkdirSync(config);
    writeFileSync(
      join(config, "mcp_server_config.yaml"),
      stringify({
        servers: [{ id: "math", command: process.execPath, args: [distPath("mcp_servers/math/server.js")] }],
      }),
    );
  });
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  async function run(model: string) {
    fake ??= await startFakeAnthropic({ handler: answer });
    const env = {
      PATH: process.env.PATH ?? "",
      HOME: dir,
      NO_COLOR: "1",
      ANTHROPIC_API_KEY: "sk-ant-e2e",
      ANTHROPIC_BASE_URL: fake.url,
    };
    const args = ["--config", config, "--db", join(dir, "pda.db"), "run", QUERY, "--json", "--model", model];
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        [distPath("main.js"), ...args],
        { env, timeout: 60_000 },
        (err, stdout, stderr) =>
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
    return { ...r, summary: JSON.parse(r.stdout) as Record<string, unknown> & { session_id: string } };
  }

  it("a whole session on Claude 4.6: structured outputs, adaptive thinking, usage and cost in the store", async () => {
    const { summary, stderr } = await run("anthropic:claude-sonnet-4-6");
    expect(stderr).toBe("");
    expect(summary).toMatchObject({
      status: "succeeded",
      final_answer: "37",
      llm_calls: 3,
      tokens: 130 + 260 + 130,
    });
    // Priced by the bundled models.yaml: $3 in, $15 out per million tokens.
    expect(summary.cost_usd).toBeCloseTo((400 * 3 + 120 * 15) / 1e6, 9);
    const requests = fake!.requests;
    expect(requests.map((r) => r.role)).toEqual(["perception", "decision", "perception"]);
    for (const r of requests) {
      expect(r.body).toMatchObject({
        model: "claude-sonnet-4-6",
        thinking: { type: "adaptive" },
        output_config: { effort: "low", format: { type: "json_schema" } },
      });
      expect(r.body).not.toHaveProperty("temperature");
      expect(r.systemText.length).toBeGreaterThan(0);
    }
    // The roles' caps from models.yaml (perception 4096, decision 8192), plus room for thinking.
    expect(requests.map((r) => r.body.max_tokens)).toEqual([4096 + 8192, 8192 + 8192, 4096 + 8192]);
    const db = new Database(join(dir, "pda.db"), { readonly: true });
    try {
      const rows = db
        .prepare(
          "SELECT role, provider, model, ok, input_tokens, output_tokens FROM llm_calls WHERE session_id = ?",
        )
        .all(summary.session_id);
      expect(rows).toEqual([
        {
          role: "perception",
          provider: "anthropic",
          model: "claude-sonnet-4-6",
          ok: 1,
          input_tokens: 100,
          output_tokens: 30,
        },
        {
          role: "decision",
          provider: "anthropic",
          model: "claude-sonnet-4-6",
          ok: 1,
          input_tokens: 200,
          output_tokens: 60,
        },
        {
          role: "perception",
          provider: "anthropic",
          model: "claude-sonnet-4-6",
          ok: 1,
          input_tokens: 100,
          output_tokens: 30,
        },
      ]);
    } finally {
      db.close();
    }
  });

  it("an older model answers through a forced tool", async () => {
    const { summary } = await run("anthropic:claude-sonnet-4-0");
    expect(summary).toMatchObject({ status: "succeeded", final_answer: "37" });
    expect(fake!.requests.map((r) => [r.mode, r.toolName])).toEqual([
      ["tool", "PerceptionSnapshot"],
      ["tool", "DecisionOutput"],
      ["tool", "PerceptionSnapshot"],
    ]);
  });

  it("a 400 from the service fails the session with the service's message", async () => {
    // A user's family entry the API refuses: a thinking budget on an adaptive-only model.
    writeFileSync(
      join(config, "models.yaml"),
      stringify({
        families: [
          {
            match: "^claude-opus-4-7",
            provider: "anthropic",
            anthropic_output: "json_schema",
            thinking_budget: 2048,
          },
        ],
      }),
    );
    const { summary, code } = await run("anthropic:claude-opus-4-7");
    expect(code).not.toBe(0);
    expect(summary).toMatchObject({ status: "failed", llm_calls: 1 });
    expect(summary.status_reason).toMatch(
      /anthropic:claude-opus-4-7 .*HTTP 400 invalid_request_error: "thinking.type.enabled" is not supported for this model/,
    );
    expect(fake!.requests).toHaveLength(1);
  });
});
