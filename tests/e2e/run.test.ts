/**
 * End to end: `pda run` as a child process, the real @google/genai client against the fake Gemini server,
 * the real math MCP server over stdio, a real SQLite file.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startFakeGemini, type FakeGemini, type FakeGeminiRequest } from "../../testing/index.js";

const ROOT = join(import.meta.dirname, "..", "..");
const MAIN = join(ROOT, "dist", "main.js");

function pda(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, ...args],
      {
        env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", NO_COLOR: "1", ...env },
        timeout: 60_000,
      },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const CODE = [
  "const product = await multiply({a: 3, b: 2});",
  "const sum = await add(32, 5);",
  "return await subtract({a: sum, b: product});",
].join("\n");

function perception(achieved: boolean, summary: string) {
  return {
    entities: ["32", "5", "3", "2"],
    result_requirement: "the value of 32 + 5 - 3 * 2",
    original_goal_achieved: achieved,
    reasoning: achieved ? "the tools computed 31" : "nothing computed yet",
    local_goal_achieved: achieved,
    local_reasoning: achieved ? "the step returned 31" : "no step yet",
    last_tooluse_summary: achieved ? "multiply, add, subtract" : "none",
    solution_summary: summary,
    confidence: achieved ? 0.95 : 0.5,
  };
}

describe("pda run, end to end", () => {
  let dir: string;
  let gemini: FakeGemini;
  const seen: FakeGeminiRequest[] = [];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "pda-e2e-"));
    seen.length = 0;
    gemini = await startFakeGemini({
      handler: (req) => {
        seen.push(req);
        if (req.role === "perception") {
          // Perception says the goal is reached only when it was shown the step's result, 31.
          const sawResult = /Mode: step_result/.test(req.userText) && /ok: 31\b/.test(req.userText);
          return {
            json: perception(sawResult, sawResult ? "31" : "not ready yet"),
            usage: { input: 120, output: 40 },
          };
        }
        return {
          json: {
            plan_text: ["Step 0: compute 32 + 5 - 3 * 2 with the math tools", "Step 1: answer"],
            step_index: 0,
            description: "multiply 3 by 2, add 32 and 5, subtract",
            type: "CODE",
            code: CODE,
          },
          usage: { input: 300, output: 80 },
        };
      },
    });
  });

  afterEach(async () => {
    await gemini.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers 31 through generated code calling the math server, and logs the whole session", async () => {
    const db = join(dir, "pda.db");
    const r = await pda(["run", "What is 32 + 5 - 3 * 2", "--json", "--db", db], {
      GEMINI_API_KEY: "test-key-not-secret-123",
      GEMINI_BASE_URL: gemini.url,
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary).toMatchObject({
      status: "succeeded",
      final_answer: "31",
      steps: 1,
      plan_versions: 1,
      tool_calls: 3,
    });
    expect(summary.llm_calls).toBe(3);
    expect(summary.tokens).toBe(120 + 40 + 300 + 80 + 120 + 40);

    // The model was shown the tools, and perception saw the tool result 31.
    const decision = seen.find((q) => q.role === "decision")!;
    expect(decision.systemText).toMatch(/multiply\(a: number, b: number\)/);
    expect(seen.filter((q) => q.role === "perception").at(-1)!.userText).toMatch(/ok: 31/);

    const sqlite = new Database(db, { readonly: true });
    try {
      const session = sqlite.prepare("SELECT * FROM sessions WHERE id = ?").get(summary.session_id) as Record<
        string,
        unknown
      >;
      expect(session).toMatchObject({
        status: "succeeded",
        final_answer: "31",
        original_query: "What is 32 + 5 - 3 * 2",
      });
      const steps = sqlite.prepare("SELECT * FROM steps WHERE session_id = ?").all(summary.session_id);
      expect(steps).toHaveLength(1);
      const calls = sqlite
        .prepare("SELECT tool, ok FROM tool_calls WHERE session_id = ? ORDER BY id")
        .all(summary.session_id) as Array<{ tool: string; ok: number }>;
      expect(calls).toEqual([
        { tool: "multiply", ok: 1 },
        { tool: "add", ok: 1 },
        { tool: "subtract", ok: 1 },
      ]);
      const llm = sqlite
        .prepare("SELECT role FROM llm_calls WHERE session_id = ? ORDER BY id")
        .all(summary.session_id);
      expect(llm.map((x) => (x as { role: string }).role)).toEqual(["perception", "decision", "perception"]);
    } finally {
      sqlite.close();
    }
  });

  it("prints a readable trace and the answer without --json", async () => {
    const r = await pda(["run", "What is 32 + 5 - 3 * 2", "--db", join(dir, "t.db")], {
      GEMINI_API_KEY: "k",
      GEMINI_BASE_URL: gemini.url,
    });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/plan v1 \(initial\)/);
    expect(r.stderr).toMatch(/math\.multiply ok/);
    expect(r.stderr).toMatch(/result 31/);
    expect(r.stderr).toMatch(/^answer$/m);
    expect(r.stdout).toMatch(/^31/);
  });

  it("replays a logged session with the model unreachable and reproduces its answer", async () => {
    const db = join(dir, "replay.db");
    const r = await pda(["run", "What is 32 + 5 - 3 * 2", "--json", "--db", db], {
      GEMINI_API_KEY: "k",
      GEMINI_BASE_URL: gemini.url,
    });
    const { session_id } = JSON.parse(r.stdout);
    await gemini.close();
    const before = seen.length;
    const replay = await pda(["replay", session_id, "--json", "--db", db], {});
    expect(replay.stderr).toBe("");
    expect(replay.code).toBe(0);
    const out = JSON.parse(replay.stdout);
    expect(out).toMatchObject({ same_answer: true, differences: [], unconsumed_model_outputs: {} });
    expect(out.replayed).toMatchObject({ status: "succeeded", final_answer: "31", tool_calls: 3 });
    expect(out.replayed.session_id).not.toBe(session_id);
    expect(seen.length).toBe(before);
    // The replay reached no model: memory still holds the one real session, not a second solution.
    const memory = await pda(["memory", "search", "What is 32 + 5 - 3 * 2", "--json", "--db", db], {});
    expect(JSON.parse(memory.stdout)).toMatchObject([{ session_id, sessions: 1, final_answer: "31" }]);
    expect(JSON.parse(memory.stdout)).toHaveLength(1);
    gemini = await startFakeGemini({ handler: () => ({ status: 500 }) }); // for afterEach
  });

  it("without a key or model says how to set one, exit 3", async () => {
    const r = await pda(["run", "What is 1 + 1", "--db", join(dir, "k.db")], {});
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/GEMINI_API_KEY/);
    expect(r.stderr).toMatch(/--model/);
    // Memory holds no warning about the query: no model ever saw it.
    const memory = await pda(["memory", "search", "What is 1 + 1", "--json", "--db", join(dir, "k.db")], {});
    expect(memory.stderr).toBe("");
    expect(JSON.parse(memory.stdout)).toEqual([]);
  });
});
