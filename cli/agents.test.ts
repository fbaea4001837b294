/**
 * Agent teams through the CLI (dist/main.js as a child process): `pda run --profile <team>` with a scripted
 * model, the real math server and a real store; then `pda show` (the agent tree), `pda agents`,
 * `pda agents stats`, and the configuration errors a team profile can have.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { robotTeamScript, type Obj } from "../agent/tests/robot-script.js";
import { distPath } from "../core/index.js";
import { MultiMCP } from "../mcp_servers/index.js";
import { cliFolder, snap, type CliFolder } from "./harness.js";

let cli: CliFolder;

const step = (code: string) => ({
  plan_text: ["Step 0: do it"],
  step_index: 0,
  description: "do it",
  type: "CODE",
  code,
});

beforeAll(() => {
  cli = cliFolder("pda-cli-agents-");
  writeFileSync(
    join(cli.config, "profiles.yaml"),
    stringify({
      default: "default",
      profiles: {
        default: {},
        team: { agent: "boss" },
        broken: { agent: "nobody" },
        typo: { agent: "typo" },
      },
    }),
  );
  writeFileSync(
    join(cli.config, "agents.yaml"),
    stringify({
      agents: {
        boss: { description: "Delegates arithmetic.", subagents: ["adder", "multiplier"] },
        adder: { description: "Adds.", tools: ["math.add"], result: { error_codes: ["ADD_FAILED"] } },
        multiplier: { description: "Multiplies.", tools: ["math.multiply"] },
        typo: { description: "Has a typo in its tools.", tools: ["math.ad"] },
      },
    }),
  );
  const report = (what: string, value: string) =>
    `await agent.report({success: true, error_code: "NONE", reason: "${what}", result: ${value}});`;
  writeFileSync(
    join(cli.dir, "script.yaml"),
    stringify({
      perception: [snap(false), snap(true, "5 and 42")],
      decision: [
        step(
          'const [a, m] = await parallel([() => agents.adder({task: "add 2 and 3"}), () => agents.multiplier({task: "multiply 6 by 7"})]);\nreturn [a.result, m.result];',
        ),
      ],
      "adder.perception": [snap(false)],
      "adder.decision": [step(`const r = await add(2, 3);\n${report("added", "r")}`)],
      "multiplier.perception": [snap(false)],
      "multiplier.decision": [step(`const r = await multiply(6, 7);\n${report("multiplied", "r")}`)],
    }),
  );
});
afterAll(() => cli.close());

describe("agent teams at the command line", () => {
  let sessionId: string;

  it("pda run --profile <team>: the trace shows each sub-agent's call, its own steps and its report", async () => {
    const r = await cli.pda([
      "run",
      "--profile",
      "team",
      "--model",
      `scripted:${join(cli.dir, "script.yaml")}`,
      "2+3 and 6*7?",
    ]);
    expect(r.stderr).not.toMatch(/^(error|warning)/m);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/⇢ agent adder \w{8} add 2 and 3/);
    expect(r.stderr).toMatch(/adder │ step 0 CODE do it/);
    expect(r.stderr).toMatch(/adder │ {5}→ math\.add ok/);
    expect(r.stderr).toMatch(/⇠ agent adder NONE added \(1 tool calls\)/);
    expect(r.stderr).toMatch(/⇠ agent multiplier NONE multiplied/);
    expect(r.stderr).toMatch(/^answer$/m);
    expect(r.stdout).toMatch(/^5 and 42/);
    sessionId = /^session (\S+)/m.exec(r.stderr)![1]!;
  });

  it("pda show renders the tree of agent sessions with their reports", async () => {
    const r = await cli.pda(["show", sessionId]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/agents boss · 2 sub-agent calls/);
    expect(r.stdout).toMatch(/[├└]─ adder \w{8} succeeded NONE added {2}1 tool calls · 2 model calls/);
    expect(r.stdout).toMatch(/[├└]─ multiplier \w{8} succeeded NONE multiplied/);
    expect(r.stdout).toMatch(/task: add 2 and 3/);
    const json = JSON.parse((await cli.pda(["show", sessionId, "--json"])).stdout) as {
      agent_calls: unknown[];
    };
    expect(json.agent_calls).toHaveLength(2);
  });

  it("pda agents lists the agents with their contracts and last outcome; pda agents stats counts tools per agent", async () => {
    const list = JSON.parse((await cli.pda(["agents", "--json"])).stdout) as Array<Record<string, unknown>>;
    const adder = list.find((a) => a.name === "adder")!;
    expect(adder).toMatchObject({ tools: ["math.add"], error_codes: ["NONE", "ADD_FAILED", "UNKNOWN"] });
    expect(adder.last).toMatchObject({ agent: "adder", status: "succeeded", parent_session_id: sessionId });
    expect(list.find((a) => a.name === "typo")!.last).toBeNull();
    const stats = JSON.parse((await cli.pda(["agents", "stats", "--json"])).stdout) as Array<
      Record<string, unknown>
    >;
    expect(stats.map((s) => [s.agent, `${s.server}.${s.tool}`, s.calls, s.ok])).toEqual([
      ["adder", "math.add", 1, 1],
      ["multiplier", "math.multiply", 1, 1],
    ]);
  });

  it("a profile naming an unknown agent, or an agent whose tool pattern matches nothing, is a config error (exit 2)", async () => {
    const unknown = await cli.pda([
      "run",
      "--profile",
      "broken",
      "--model",
      `scripted:${join(cli.dir, "script.yaml")}`,
      "hi",
    ]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(
      /profile "broken": agent "nobody" is not in .*agents\.yaml \(agents: boss, adder, multiplier, typo\)/,
    );
    const typo = await cli.pda([
      "run",
      "--profile",
      "typo",
      "--model",
      `scripted:${join(cli.dir, "script.yaml")}`,
      "hi",
    ]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(
      /agent "typo": tool pattern "math\.ad" matches no connected tool \(servers: math\)/,
    );
  });
});

describe("the shipped robot-team profile at the command line", () => {
  it("pda run --profile robot-team completes put_block_in_target; pda show renders approach → pick → approach → place", async () => {
    // Only the robot server; profiles.yaml and agents.yaml come from the bundled config.
    const config = join(cli.dir, "robot-config");
    mkdirSync(config);
    const server = distPath("mcp_servers/robot/server.js");
    const episodes = join(cli.dir, "episodes.jsonl");
    writeFileSync(
      join(config, "mcp_server_config.yaml"),
      stringify({
        servers: [{ id: "robot", command: process.execPath, args: [server, "--report", episodes] }],
      }),
    );
    // The layout of the seed, to write what each agent's model will say (the simulator is deterministic).
    const hub = await MultiMCP.start({
      servers: [{ id: "robot", command: process.execPath, args: [server] }],
    });
    let reset: { goal: { block: string }; observation: { objects: Obj[] } };
    try {
      reset = (await hub.call("robot.reset", { task: "put_block_in_target", seed: 4 })) as typeof reset;
    } finally {
      await hub.close();
    }
    const block = reset.observation.objects.find((o) => o.name === reset.goal.block)!;
    const script = join(cli.dir, "robot-script.yaml");
    writeFileSync(script, stringify(robotTeamScript(block, { task: "put_block_in_target", seed: 4 })));

    const r = await cli.pda(
      [
        "run",
        "--profile",
        "robot-team",
        "--model",
        `scripted:${script}`,
        "put the block in the target zone (seed 4)",
      ],
      config,
    );
    expect(r.stderr).not.toMatch(/^(error|warning)/m);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/⇠ agent place NONE released; the task check passed/);
    const record = JSON.parse(readFileSync(episodes, "utf8").trim().split("\n").at(-1)!) as Record<
      string,
      unknown
    >;
    expect(record).toMatchObject({ task: "put_block_in_target", seed: 4, success: true, finished: true });

    const id = /^session (\S+)/m.exec(r.stderr)![1]!;
    const show = await cli.pda(["show", id], config);
    expect(show.code).toBe(0);
    const tree = show.stdout.slice(show.stdout.indexOf("agents orchestrator"));
    expect(tree).toMatch(/^agents orchestrator · 4 sub-agent calls/);
    expect([...tree.matchAll(/[├└]─ (\w+) \w{8} succeeded NONE/g)].map((m) => m[1])).toEqual([
      "approach",
      "pick",
      "approach",
      "place",
    ]);
  });
});
