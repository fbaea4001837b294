/** The memory commands as a user runs them: `node dist/main.js …` against a real store file. */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentSession, distPath } from "../../core/index.js";
import { SessionStore } from "../index.js";
import { simulateSession } from "./simulate.js";

const MAIN = distPath("main.js");
let dir: string;
let db: string;
let expected: AgentSession;

function pda(...args: string[]) {
  const r = spawnSync(process.execPath, [MAIN, "--db", db, ...args], {
    encoding: "utf8",
    timeout: 30_000,
    env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0", PDA_DB: "" },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** stderr of a command that must fail with exit code 2 (bad usage, or nothing there). */
function fails(...args: string[]): string {
  const r = pda(...args);
  expect(r.code, `pda ${args.join(" ")}: ${r.stderr}`).toBe(2);
  return r.stderr;
}

/** stdout of a command that must succeed (its stderr in the failure message otherwise). */
function ok(...args: string[]): string {
  const r = pda(...args);
  expect(r.code, `pda ${args.join(" ")}: ${r.stderr}`).toBe(0);
  return r.stdout;
}

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: build first (npx tsc -p tsconfig.json)`);
  dir = mkdtempSync(join(tmpdir(), "pda-cli-"));
  db = join(dir, "pda.db");
  const store = SessionStore.open(db);
  let t = Date.parse("2025-05-01T08:00:00Z");
  const now = () => new Date((t += 500)).toISOString();
  expected = simulateSession(store, {
    id: "5e55a0c1-0000-4000-8000-000000000001",
    query: "What is 32 + 5 - 3 * 2",
    steps: 2,
    replanAfter: [0],
    failingTools: [1],
    humanAfter: 0,
    price: { input_per_mtok: 1, output_per_mtok: 10 },
    now,
  });
  simulateSession(store, {
    id: "fa11ed00-0000-4000-8000-000000000002",
    query: "Fetch the weather in Paris",
    steps: 1,
    status: "failed",
    statusReason: "the weather server timed out",
    now,
  });
  store.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("pda sessions / show / export / memory", () => {
  it("lists sessions, filtered by status and words", () => {
    const all = ok("sessions", "--json");
    expect(JSON.parse(all).map((s: { session_id: string }) => s.session_id.slice(0, 4))).toEqual([
      "fa11",
      "5e55",
    ]);
    const failed = JSON.parse(ok("sessions", "--status", "failed", "--json"));
    expect(failed).toMatchObject([{ status: "failed", status_reason: "the weather server timed out" }]);
    const text = ok("sessions", "--search", "what", "--limit", "1");
    expect(text).toContain("5e55a0c1");
    expect(text).not.toContain("fa11ed00");
  });

  it("shows a session's timeline by id prefix", () => {
    const out = ok("show", "5e55");
    for (const piece of [
      "session 5e55a0c1-0000-4000-8000-000000000001  succeeded",
      "5 model calls · 4 tool calls",
      "query  What is 32 + 5 - 3 * 2",
      "perception #0 (user_query)",
      "plan v1 (initial, triggered by snapshot:0)",
      "plan v2 (replan_after_failure, triggered by step:0)",
      "step 1 CODE completed attempt 1 · plan v2 part 1",
      "│ const a = await multiply(3, 1);",
      "→ math.add TOOL_ERROR",
      'result {"value":35,"note":"ok"}',
      "human (clarification) answered by scripted",
      "A metres",
      "model decision scripted/sim-1",
      "answer 31",
    ]) {
      expect(out).toContain(piece);
    }
    // What each model call cost, and the session in all.
    const costs = [...out.matchAll(/^ {2}model \w+ scripted\/sim-1 · (\d+)→(\d+) tok · \$(\d\.\d{6}) · /gm)];
    expect(costs).toHaveLength(5);
    for (const [, inp, outp, cost] of costs) expect(Number(cost)).toBeCloseTo((+inp! + 10 * +outp!) / 1e6, 6);
    expect(out).toContain(
      `tokens (${expected.usage.input_tokens} in, ${expected.usage.output_tokens} out) · $`,
    );
    expect(out).toContain(`$${expected.usage.cost_usd.toFixed(6)}`);
    // In the order it happened: the replan comes after step 0 and the human's answer.
    expect(out.indexOf("step 0")).toBeLessThan(out.indexOf("human (clarification)"));
    expect(out.indexOf("human (clarification)")).toBeLessThan(out.indexOf("plan v2"));
  });

  it("exports the session as AgentSession JSON (show --json, export --out)", () => {
    const shown = AgentSession.parse(JSON.parse(ok("show", "5e55a0c1", "--json")));
    expect(shown).toEqual(expected);
    const file = join(dir, "export.json");
    ok("export", "5e55", "--out", file);
    expect(AgentSession.parse(JSON.parse(readFileSync(file, "utf8")))).toEqual(expected);
    expect(JSON.parse(ok("export", "fa11")).status).toBe("failed");
  });

  it("prints what memory search returns, and tool statistics", () => {
    const hits = JSON.parse(ok("memory", "search", "weather in Paris", "--json"));
    expect(hits).toMatchObject([
      { kind: "warning", reason: "tried and failed because the weather server timed out" },
    ]);
    // A person answered a question in that session: memory keeps it out until they say otherwise.
    expect(ok("memory", "search", "what is 32 + 5 - 3 * 2")).toMatch(/no past session is relevant enough/);
    expect(ok("memory", "remember", "5e55a0c1")).toMatch(
      /memory may now reuse session 5e55a0c1-0000-4000-8000-000000000001/,
    );
    const text = ok("memory", "search", "what is 32 + 5 - 3 * 2");
    expect(text).toContain("solution What is 32 + 5 - 3 * 2");
    expect(text).toContain("answer 31");
    const tools = JSON.parse(ok("memory", "tools", "--json"));
    expect(tools.find((t: { tool: string }) => t.tool === "add")).toMatchObject({ calls: 3, ok: 2 });
  });

  it("explains bad input and missing things with exit code 2", () => {
    expect(fails("sessions", "--status", "nope")).toContain("--status must be one of");
    expect(fails("memory", "search", "x", "--threshold", "2")).toContain(
      "--threshold must be a number from 0 to 1",
    );
    expect(fails("show", "zz")).toContain('no session with id or id prefix "zz"');
    db = join(dir, "absent.db");
    try {
      expect(ok("sessions")).toContain("no sessions");
      expect(fails("show", "5e55")).toContain("no session store at");
    } finally {
      db = join(dir, "pda.db");
    }
  });
});
