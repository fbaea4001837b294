import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadProfile } from "../../config/index.js";
import { ConfigError, DEFAULT_CONFIG_DIR, newSession, type AgentSession } from "../../core/index.js";
import {
  checkReport,
  loadAgentsConfig,
  outcomeOf,
  parseAgentsConfig,
  toolAllowed,
  type Agent,
} from "../team/index.js";

const dir = mkdtempSync(join(tmpdir(), "pda-agents-config-"));
writeFileSync(join(dir, "role.md"), "# Role\nBe brief.\n");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const parse = (yaml: string) => parseAgentsConfig(join(dir, "agents.yaml"), yaml);
const error = (yaml: string) => {
  try {
    parse(yaml);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("no error");
};

describe("agents.yaml", () => {
  it("loads agents with their prompt text, completed contract and merged recovery table", () => {
    const c = parse(`
recovery:
  UNKNOWN: retry once
  ADD_FAILED: shared hint
agents:
  adder:
    description: adds
    prompt: role.md
    tools: [math.add]
    result: { error_codes: [ADD_FAILED], fields: { operands: { type: array } } }
    recovery: { ADD_FAILED: own hint }
    budgets: { max_steps: 2 }
`);
    const a = c.agents.adder!;
    expect(a.promptText).toBe("# Role\nBe brief.");
    expect(a.codes).toEqual(["NONE", "ADD_FAILED", "UNKNOWN"]);
    expect(a.recoveryTable).toEqual({ UNKNOWN: "retry once", ADD_FAILED: "own hint" });
    expect(a.budgets).toEqual({ max_steps: 2 });
    expect(a).toMatchObject({ decision: "single", subagents: [], handoffs: [], models: {} });
    expect(c.max_handoffs).toBe(5);
  });

  it.each([
    [
      "agents:\n  a:\n    description: x\n    subagents: [b]\n",
      /agents\.yaml:4: agents\.a\.subagents\.0: no agent named "b"/,
    ],
    [
      "agents:\n  a:\n    description: x\n    handoffs: [a]\n",
      /:4: agents\.a\.handoffs\.0: an agent cannot name itself/,
    ],
    ["agents:\n  list:\n    description: x\n", /:3: agents\.list: "list" is reserved/],
    [
      "agents:\n  a-b:\n    description: x\n",
      /:3: agents\.a-b: "a-b" is not an agent name: use an identifier/,
    ],
    [
      'agents:\n  a:\n    description: x\n    tools: ["math add"]\n',
      /:4: agents\.a\.tools\.0: a tool pattern/,
    ],
    [
      "agents:\n  a:\n    description: x\n    prompt: nowhere.md\n",
      /:4: agents\.a\.prompt: prompt file .*nowhere\.md does not exist/,
    ],
    [
      "agents:\n  a:\n    description: x\n    result: { error_codes: [BAD] }\n    recovery: { OTHER: y }\n",
      /:5: agents\.a\.recovery\.OTHER: "OTHER" is not one of its error codes \(NONE, BAD, UNKNOWN\)/,
    ],
    [
      "agents:\n  a:\n    description: x\n    result: { error_codes: [lower] }\n",
      /agents\.a\.result\.error_codes\.0: an error code is UPPER_SNAKE_CASE/,
    ],
    [
      "agents:\n  a:\n    description: x\n    result: { fields: { reason: { type: string } } }\n",
      /agents\.a\.result\.fields\.reason: "reason" is a report key/,
    ],
    [
      'agents:\n  a:\n    description: x\n    models: { decision: "nope:x" }\n',
      /:4: agents\.a\.models\.decision: .*unknown provider "nope"/,
    ],
    [
      "agents:\n  a:\n    description: x\n    budgets: { max_stepz: 3 }\n",
      /:4: agents\.a\.budgets: Unrecognized key: "max_stepz"/,
    ],
    ["agents:\n  a:\n    description: x\n    colour: red\n", /agents\.a: Unrecognized key: "colour"/],
    [
      "agents:\n  a:\n    description: x\n    subagents: [b]\n  b:\n    description: y\n    subagents: [a]\n",
      /agents\.a\.subagents: sub-agents call each other in a cycle: a → b → a/,
    ],
    ["agents:\n  a:\n    tools: []\n", /:3: agents\.a\.description: /],
  ])("names file:line:field for %j", (yaml, message) => {
    expect(error(yaml)).toMatch(message);
  });

  it("the shipped agents.yaml and team profiles load; robot sub-agents have disjoint tool patterns", () => {
    const c = loadAgentsConfig(DEFAULT_CONFIG_DIR);
    expect(loadProfile(DEFAULT_CONFIG_DIR, "single").profile.agent).toBeUndefined();
    expect(c.agents[loadProfile(DEFAULT_CONFIG_DIR, "planner-coder").profile.agent!]!.decision).toBe(
      "planner_coder",
    );
    const orchestrator = c.agents[loadProfile(DEFAULT_CONFIG_DIR, "robot-team").profile.agent!]!;
    expect(orchestrator.subagents).toEqual(["approach", "pick", "place"]);
    const patterns = ["orchestrator", "approach", "pick", "place"].flatMap((n) => c.agents[n]!.tools);
    expect(new Set(patterns).size).toBe(patterns.length);
    for (const n of orchestrator.subagents) {
      expect(c.agents[n]!.promptText.length).toBeGreaterThan(100);
      expect(c.agents[n]!.codes.length).toBeGreaterThan(3);
    }
  });

  it("tool patterns: *, server, server.tool, globs", () => {
    const t = { server: "robot", name: "move_to" };
    expect(toolAllowed(["*"], t)).toBe(true);
    expect(toolAllowed(["robot"], t)).toBe(true);
    expect(toolAllowed(["robot.move_*"], t)).toBe(true);
    expect(toolAllowed(["*.move_to"], t)).toBe(true);
    expect(toolAllowed(["robot.move"], t)).toBe(false);
    expect(toolAllowed(["math.*", "robot.open_gripper"], t)).toBe(false);
    expect(toolAllowed([], t)).toBe(false);
  });
});

describe("reports", () => {
  const agent: Agent = parse(`
agents:
  pick:
    description: picks
    result: { error_codes: [PICK_MISSED], fields: { width: { type: number } } }
`).agents.pick!;
  const ended = (over: Partial<AgentSession>): AgentSession => ({
    ...newSession("task", "s1", "2026-01-01T00:00:00Z"),
    ...over,
  });

  it("checks success against the code, the codes against the enum, the extra fields by type", () => {
    expect(
      checkReport(agent, { success: false, error_code: "PICK_MISSED", reason: "r", width: 0.04 }),
    ).toMatchObject({ ok: true });
    expect(checkReport(agent, { success: false, error_code: "NONE", reason: "r" })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/needs an error code other than "NONE"/),
    });
    expect(
      checkReport(agent, { success: true, error_code: "NONE", reason: "r", width: "wide" }),
    ).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^width: /),
    });
    expect(checkReport(agent, { success: true, error_code: "NONE", reason: "" })).toMatchObject({
      ok: false,
    });
  });

  it("what the caller gets for each way a sub-agent can end", () => {
    const report = { success: true, error_code: "NONE", reason: "done", result: 1 };
    expect(outcomeOf(agent, "s1", ended({ report, status: "succeeded" }))).toEqual({
      ...report,
      tool_calls_used: 0,
      session_id: "s1",
    });
    // A CONCLUDE whose conclusion is a valid report counts as the report.
    const concluded = ended({
      status: "succeeded",
      state: { ...ended({}).state, final_answer: JSON.stringify(report) },
    });
    expect(outcomeOf(agent, "s1", concluded)).toMatchObject(report);
    // Anything else is UNKNOWN with the reason.
    const prose = ended({ status: "succeeded", state: { ...ended({}).state, final_answer: "I picked it." } });
    expect(outcomeOf(agent, "s1", prose)).toMatchObject({
      success: false,
      error_code: "UNKNOWN",
      reason: expect.stringMatching(/ended without a valid report; its answer was: I picked it\./),
    });
    const badJson = ended({
      status: "succeeded",
      state: {
        ...ended({}).state,
        final_answer: JSON.stringify({ success: true, error_code: "X", reason: "r" }),
      },
    });
    expect(outcomeOf(agent, "s1", badJson).reason).toMatch(/without a valid report \(error_code: /);
    expect(
      outcomeOf(
        agent,
        "s1",
        ended({ status: "budget_exhausted", status_reason: "reached the step budget (2 steps)" }),
      ),
    ).toMatchObject({
      error_code: "UNKNOWN",
      reason: "budget_exhausted: reached the step budget (2 steps)",
    });
    expect(outcomeOf(agent, "s1", undefined, new ConfigError("boom"))).toMatchObject({
      error_code: "UNKNOWN",
      reason: "the agent crashed: CONFIG_INVALID: boom",
      tool_calls_used: 0,
    });
  });
});
