/**
 * Team sessions at the command line (dist/main.js as a child process, scripted models, the real math server,
 * a real store): what sub-agents spend in `pda run --json` and `pda show`, a parent whose budget its
 * sub-agents spent, and `pda replay` of a team session — the tree rebuilt, differences reported per session.
 */
import { cpSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { cliFolder, snap, type CliFolder } from "./harness.js";

let cli: CliFolder;

const plan = { plan_text: ["Step 0: do it"], step_index: 0, description: "do it", type: "CODE" };
const report = (value: string) =>
  `await agent.report({success: true, error_code: "NONE", reason: "done", result: ${value}});`;

const agents = (adderTools: string[]) =>
  stringify({
    agents: {
      boss: { description: "Delegates arithmetic.", subagents: ["adder", "pc"] },
      adder: { description: "Adds.", tools: adderTools },
      pc: { description: "Plans, then codes.", tools: ["math.*"], decision: "planner_coder" },
    },
  });

beforeAll(() => {
  cli = cliFolder("pda-cli-replay-");
  writeFileSync(
    join(cli.config, "profiles.yaml"),
    stringify({
      default: "default",
      profiles: {
        default: {},
        team: { agent: "boss" },
        tight: { agent: "boss", budgets: { max_llm_calls: 5 } },
        pc: { agent: "pc" },
      },
    }),
  );
  writeFileSync(join(cli.config, "agents.yaml"), agents(["math.add"]));
  // The same, but adder may no longer add: a replay under it differs in adder's session.
  cpSync(cli.config, join(cli.dir, "changed"), { recursive: true });
  writeFileSync(join(cli.dir, "changed", "agents.yaml"), agents(["math.subtract"]));
  writeFileSync(
    join(cli.dir, "script.yaml"),
    stringify({
      perception: [snap(false), snap(true, "5 and 42")],
      decision: [
        {
          ...plan,
          code: 'const [a, p] = await parallel([() => agents.adder({task: "add 2 and 3"}), () => agents.pc({task: "multiply 6 by 7"})]);\nreturn [a.result, p.result];',
        },
      ],
      "adder.perception": [snap(false)],
      "adder.decision": [{ ...plan, code: report("await add(2, 3)") }],
      "pc.perception": [snap(false)],
      "pc.planner": [{ ...plan, brief: "multiply 6 by 7 and report the product" }],
      "pc.coder": [{ code: report("await multiply(6, 7)") }],
    }),
  );
});
afterAll(() => cli.close());

const run = (profile: string) =>
  cli.pda([
    "run",
    "--profile",
    profile,
    "--model",
    `scripted:${join(cli.dir, "script.yaml")}`,
    "2+3 and 6*7?",
    "--json",
  ]);

describe("a team session at the command line", () => {
  let id: string;
  let summary: Record<string, unknown>;

  it("pda run --json: the session's own figures, and with its sub-agents", async () => {
    const r = await run("team");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    summary = JSON.parse(r.stdout) as Record<string, unknown>;
    id = summary.session_id as string;
    // boss: two perceptions and a decision; adder: perception and decision; pc: perception, planner and coder.
    expect(summary).toMatchObject({ status: "succeeded", final_answer: "5 and 42", llm_calls: 3 });
    expect(summary.with_subagents).toMatchObject({ subagent_calls: 2, llm_calls: 8 });
  });

  it("pda show: the rolled-up figures under the session's own", async () => {
    const r = await cli.pda(["show", id]);
    expect(r.code).toBe(0);
    const tokens = (summary.with_subagents as { tokens: number }).tokens;
    expect(r.stdout).toMatch(/· 3 model calls · 0 tool calls ·/);
    expect(r.stdout).toContain(`with its 2 sub-agent calls, in all: 8 model calls · ${tokens} tokens`);
  });

  it("a parent whose model-call budget its sub-agents spent ends budget_exhausted, saying so (exit 1)", async () => {
    const r = await run("tight");
    expect(r.code).toBe(1);
    const s = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(s).toMatchObject({
      status: "budget_exhausted",
      status_reason: "reached the model-call budget (5 calls): 2 by this session, 3 by its sub-agents",
      llm_calls: 2,
      with_subagents: { subagent_calls: 2, llm_calls: 5 },
    });
  });

  it("pda replay rebuilds the tree: each sub-agent session from its own logged outputs, all alike (exit 0)", async () => {
    const r = await cli.pda(["replay", id, "--profile", "team", "--json"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, unknown> & {
      sub_agents: Array<Record<string, unknown>>;
    };
    expect(out).toMatchObject({
      same_answer: true,
      differences: [],
      unconsumed_model_outputs: {},
      replayed: { status: "succeeded", final_answer: "5 and 42", with_subagents: { llm_calls: 8 } },
    });
    expect(
      out.sub_agents.map((c) => [c.agent, c.same_answer, c.differences, c.unconsumed_model_outputs]),
    ).toEqual([
      ["adder", true, [], {}],
      ["pc", true, [], {}],
    ]);
    const replayedId = (out.replayed as { session_id: string }).session_id;
    const tree = await cli.pda(["show", replayedId]);
    expect(tree.stdout).toMatch(/[├└]─ adder \w{8} succeeded NONE done/);
    expect(tree.stdout).toMatch(/[├└]─ pc \w{8} succeeded NONE done/);

    const text = await cli.pda(["replay", id, "--profile", "team"]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/same final answer as /);
    expect(text.stdout).toMatch(/sub-agent adder logged \w{8} → replayed \w{8}: same answer, same steps/);
    expect(text.stdout).toMatch(/sub-agent pc logged \w{8} → replayed \w{8}: same answer, same steps/);
  });

  it("pda replay --session-id gives the replayed session the id asked for, and refuses one taken or not a UUID", async () => {
    const asked = "0f6c2b1e-7d3a-4c55-9e21-5b8a6d4f3c10";
    const r = await cli.pda(["replay", id, "--profile", "team", "--json", "--session-id", asked]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ same_answer: true, replayed: { session_id: asked } });
    const again = await cli.pda(["replay", id, "--profile", "team", "--session-id", asked]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(`--session-id ${asked}: the store has that session already`);
    const bad = await cli.pda(["replay", id, "--profile", "team", "--session-id", "mine"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--session-id must be a UUID, got "mine"/);
  });

  it("pda replay reports differences per session: adder's step, and the caller's step that got its report (exit 1)", async () => {
    const r = await cli.pda(["replay", id, "--profile", "team", "--json"], join(cli.dir, "changed"));
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout) as {
      same_answer: boolean;
      differences: Array<Record<string, unknown>>;
      sub_agents: Array<Record<string, unknown>>;
    };
    // The caller's perception is played back as logged, so its answer is the same; its step's value is not.
    expect(out.same_answer).toBe(true);
    expect(out.differences).toMatchObject([{ step: 0, logged: { ok: true, value: [5, 42] } }]);
    const [adder, pc] = out.sub_agents;
    expect(adder).toMatchObject({
      agent: "adder",
      same_answer: false,
      status: { logged: "succeeded", replayed: "failed" },
      differences: [
        { step: 0, logged: { ok: true }, replayed: { ok: false, error: "GUARD_CODE_UNKNOWN_TOOL" } },
      ],
    });
    expect(pc).toMatchObject({ agent: "pc", same_answer: true, differences: [] });

    const text = await cli.pda(["replay", id, "--profile", "team"], join(cli.dir, "changed"));
    expect(text.stdout).toMatch(
      /sub-agent adder logged \w{8} → replayed \w{8}: answer differs \(succeeded → failed\)/,
    );
    expect(text.stdout).toMatch(
      / {4}step 0 \(do it\) differs: logged \{"ok":true.*replayed \{"ok":false,"error":"GUARD_CODE_UNKNOWN_TOOL"\}/,
    );
  });

  it("pda replay picks the profile that runs the session's agent, and refuses one that cannot replay it (exit 2)", async () => {
    // Two profiles run boss: which one the session ran under is not logged.
    const ambiguous = await cli.pda(["replay", id]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(
      /was run by agent "boss"; name the profile it ran under with --profile \(profiles that run it: team, tight\)/,
    );
    const wrong = await cli.pda(["replay", id, "--profile", "default"]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/was run by agent "boss", but profile "default" runs no agent team/);

    const child = (
      JSON.parse((await cli.pda(["show", id, "--json"])).stdout) as {
        agent_calls: Array<{ session_id: string }>;
      }
    ).agent_calls[0]!.session_id;
    const sub = await cli.pda(["replay", child]);
    expect(sub.code).toBe(2);
    expect(sub.stderr).toMatch(
      new RegExp(`is sub-agent \\w+'s session, called by ${id}; replay its caller's session`),
    );

    // One profile runs pc: its planner-coder session replays with no --profile.
    const script = join(cli.dir, "pc.yaml");
    writeFileSync(
      script,
      stringify({
        perception: [snap(false), snap(true, "42")],
        planner: [{ ...plan, brief: "multiply 6 by 7 and return the product" }],
        coder: [{ code: "return await multiply(6, 7);" }],
      }),
    );
    const pcRun = await cli.pda([
      "run",
      "--profile",
      "pc",
      "--model",
      `scripted:${script}`,
      "6*7?",
      "--json",
    ]);
    expect(pcRun.code).toBe(0);
    const pcId = (JSON.parse(pcRun.stdout) as { session_id: string }).session_id;
    // Its decision is two model calls in the log, the planner's then the coder's, each with its own tokens.
    const shown = await cli.pda(["show", pcId]);
    expect(shown.stdout.match(/model (perception|planner|coder) scripted\/\S+ · \d+→\d+ tok/g)).toHaveLength(
      4,
    );
    expect(shown.stdout).toMatch(/model planner [^\n]*\n\s*model coder /);
    const pcReplay = await cli.pda(["replay", pcId, "--json"]);
    expect(pcReplay.stderr).toBe("");
    expect(pcReplay.code).toBe(0);
    expect(JSON.parse(pcReplay.stdout)).toMatchObject({
      replayed: { status: "succeeded", final_answer: "42" },
      same_answer: true,
      differences: [],
      unconsumed_model_outputs: {},
      sub_agents: [],
    });
  });
});
