/** `pda servers`, `pda tools`, `pda call` as child processes against a temp config: output and exit codes. */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../core/index.js";

const MAIN = join(PACKAGE_ROOT, "dist/main.js");
const MATH = join(PACKAGE_ROOT, "dist/mcp_servers/math/server.js");
const FAULT = join(PACKAGE_ROOT, "dist/mcp_servers/testing/fault_server.js");
const HOSTILE = join(PACKAGE_ROOT, "dist/mcp_servers/testing/hostile_server.js");
const dir = mkdtempSync(join(tmpdir(), "pda-cli-hub-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const yaml = join(dir, "hub.yaml");
writeFileSync(
  yaml,
  [
    "servers:",
    "  - id: math",
    `    command: ${JSON.stringify(process.execPath)}`,
    `    args: [${JSON.stringify(MATH)}]`,
    "  - id: broken",
    `    command: ${JSON.stringify(process.execPath)}`,
    `    args: [${JSON.stringify(FAULT)}, --exit-at-start]`,
  ].join("\n"),
);
const desktop = join(dir, "claude_desktop_config.json");
writeFileSync(desktop, JSON.stringify({ mcpServers: { calc: { command: process.execPath, args: [MATH] } } }));

function pda(...args: string[]) {
  // A store of its own: the tool-list cache lives there (never the machine's default store).
  const r = spawnSync(process.execPath, [MAIN, "--db", join(dir, "pda.db"), ...args], {
    encoding: "utf8",
    timeout: 30_000,
    env: { ...process.env, NO_COLOR: "1" },
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe("pda servers / tools / call", () => {
  it("servers shows state, tool count and the last error; exit 3 when one failed", () => {
    const r = pda("--config", yaml, "servers");
    expect(r.code).toBe(3);
    expect(r.out).toMatch(/math\s+ready\s+15 tools/);
    expect(r.out).toMatch(/broken\s+failed\s+0 tools.*exited with code 3/);
    const json = JSON.parse(pda("--config", yaml, "servers", "--json").out) as {
      id: string;
      state: string;
    }[];
    // math's tools are cached now, so it is not started again; broken has no list to cache and is retried.
    expect(json.map((s) => [s.id, s.state])).toEqual([
      ["math", "cached"],
      ["broken", "failed"],
    ]);
    expect(pda("--config", yaml, "servers").out).toMatch(/math\s+cached\s+15 tools/);
  });

  it("tools --refresh starts the servers and stores their lists again", () => {
    pda("--config", yaml, "tools");
    const cached = pda("--config", yaml, "--verbose", "tools", "--server", "math");
    expect(cached.out).toMatch(/^math\.add\(a: number, b: number\)$/m);
    expect(cached.err).not.toMatch(/\[math\] connecting/);
    const refreshed = pda("--config", yaml, "--verbose", "tools", "--server", "math", "--refresh");
    expect(refreshed.code).toBe(0);
    expect(refreshed.err).toMatch(/\[math\] ready/);
    expect(refreshed.out).toMatch(/^math\.add\(a: number, b: number\)$/m);
  });

  it("tools lists signatures, or JSON with input schemas", () => {
    const r = pda("--config", yaml, "tools", "--server", "math");
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^math\.add\(a: number, b: number\)$/m);
    const tools = JSON.parse(pda("--config", yaml, "tools", "--server", "math", "--json").out) as {
      qualified: string;
      inputSchema: { required: string[] };
    }[];
    expect(tools.find((t) => t.qualified === "math.factorial")?.inputSchema.required).toEqual(["a"]);
    expect(pda("--config", yaml, "tools", "--server", "nope").code).toBe(2);
  });

  it("call prints the result as JSON with the exit codes of DESIGN.md", () => {
    const ok = pda("--config", yaml, "call", "math.fibonacci_numbers", '{"n": 5}');
    expect([ok.code, JSON.parse(ok.out)]).toEqual([0, [0, 1, 1, 2, 3]]);
    const toolError = pda("--config", yaml, "call", "math.divide", '{"a": 1, "b": 0}');
    expect(toolError.code).toBe(1);
    expect(toolError.err).toMatch(/TOOL_ERROR: math\.divide: division by zero/);
    expect(pda("--config", yaml, "call", "math.add", "{not json").code).toBe(2);
    expect(pda("--config", yaml, "call", "math.add", '{"a": "x", "b": 1}').err).toMatch(/"a" must be number/);
    const down = pda("--config", yaml, "call", "broken.echo", '{"text": "x"}');
    expect(down.code).toBe(3);
    expect(down.err).toMatch(/SERVER_UNAVAILABLE/);
  });

  it("takes a desktop client's mcpServers JSON as --config, and bad config exits 2 naming the line", () => {
    const r = pda("--config", desktop, "call", "calc.mine", '{"a": 10, "b": 2}');
    expect([r.code, r.out.trim()]).toEqual([0, "6"]);
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "servers:\n  - id: x\n    command: node\n    timeout_ms: fast\n");
    const e = pda("--config", bad, "servers");
    expect(e.code).toBe(2);
    expect(e.err).toMatch(/bad\.yaml:4: servers\.0\.timeout_ms/);
  });

  it("prints no control sequence a server sent, and routes bank.transfer to bank whatever another server calls its tools", () => {
    const hostile = join(dir, "hostile.yaml");
    const entry = (id: string, role: string) => [
      `  - id: ${id}`,
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: [${JSON.stringify(HOSTILE)}, ${role}]`,
    ];
    writeFileSync(
      hostile,
      [
        "servers:",
        ...entry("art", "--ansi"),
        ...entry("bank", "--bank"),
        ...entry("evil", "--impostor"),
      ].join("\n"),
    );
    // eslint-disable-next-line no-control-regex -- looking for control characters
    const controls = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;
    const tools = pda("--config", hostile, "tools");
    expect(tools.code).toBe(0);
    expect(tools.out).toMatch(/^ {2}Paint red text here$/m);
    expect(tools.out).toMatch(/^evil\.bank\.transfer\(amount: number\)$/m);
    const servers = pda("--config", hostile, "servers");
    expect(servers.out).toMatch(/warning tool name .* holds control characters; not exposed/);
    expect(servers.out).toMatch(/warning tool name "bank\.transfer" holds the separator/);
    const failed = pda("--config", hostile, "call", "art.paint", '{"colour": "red"}');
    expect([failed.code, failed.err]).toEqual([1, expect.stringMatching(/art\.paint: failed badly/)]);
    for (const r of [tools, servers, failed]) expect(r.out + r.err).not.toMatch(controls);
    const paid = pda("--config", hostile, "call", "bank.transfer", '{"amount": 1}');
    expect([paid.code, JSON.parse(paid.out)]).toEqual([0, { by: "bank" }]);
  });
});
