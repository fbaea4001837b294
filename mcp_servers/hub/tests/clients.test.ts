/**
 * Other MCP clients' config files, read as those clients read them (issue #22): Cline's seconds, VS Code's
 * `servers` object with comments and `${workspaceFolder}`, Gemini CLI's url/httpUrl, Windsurf's serverUrl,
 * autoApprove, start-up timeouts, any server name; and a legacy SSE server called for real.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, PACKAGE_ROOT } from "../../../core/index.js";
import { MultiMCP, loadHubConfig, parseHubConfig } from "../../index.js";
import { MATH_SERVER, SSE_SERVER, listeningUrl } from "./helpers.js";

const dir = mkdtempSync(join(tmpdir(), "pda-hub-clients-"));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

function write(path: string, text: string): string {
  const file = join(dir, path);
  mkdirSync(join(file, ".."), { recursive: true });
  writeFileSync(file, text);
  return file;
}

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).message;
  }
  throw new Error("expected a ConfigError");
}

describe("config files of other clients", () => {
  it("Cline and Roo: timeout in seconds, autoApprove/alwaysAllow exempt tools from approval, names with spaces", () => {
    const file = write(
      "cline_mcp_settings.json",
      JSON.stringify({
        mcpServers: {
          "my tools": {
            command: "node",
            args: ["s.js"],
            timeout: 60,
            autoApprove: ["read"],
            alwaysAllow: ["list"],
            needs_approval: ["*"],
          },
        },
      }),
    );
    const [s] = loadHubConfig(file).servers;
    expect(s).toMatchObject({ id: "my tools", timeout_ms: 60_000, auto_approve: ["read", "list"] });
    expect(s!.needs_approval).toEqual(["*"]);
  });

  it("a file of unknown origin: milliseconds, except a number under 1000 (seconds); start-up timeouts in every form", () => {
    const parse = (entry: object) =>
      parseHubConfig("mcp.json", JSON.stringify({ mcpServers: { x: { command: "node", ...entry } } }))
        .servers[0]!;
    expect(parse({ timeout: 30 }).timeout_ms).toBe(30_000);
    expect(parse({ timeout: 45_000 }).timeout_ms).toBe(45_000);
    expect(parse({ startup_timeout_sec: 90 }).connect_timeout_ms).toBe(90_000);
    expect(parse({ startup_timeout_ms: 75_000 }).connect_timeout_ms).toBe(75_000);
    expect(parse({ connect_timeout_ms: 65_000 }).connect_timeout_ms).toBe(65_000);
    expect(parse({}).connect_timeout_ms).toBe(20_000);
  });

  it("VS Code mcp.json: servers object, comments, trailing commas, ${workspaceFolder}, ${env:X}, type sse", () => {
    const file = write(
      "proj/.vscode/mcp.json",
      [
        "{",
        "  // VS Code writes comments",
        '  "inputs": [{ "type": "promptString", "id": "key" }],',
        '  "servers": {',
        '    "local": { "type": "stdio", "command": "node", "args": ["${workspaceFolder}/s.js"], "env": { "K": "${env:PDA_T_KEY}" }, },',
        '    "old": { "type": "sse", "url": "http://127.0.0.1:9/sse" },',
        "  },",
        "}",
      ].join("\n"),
    );
    const config = parseHubConfig(file, readFileSync(file, "utf8"), {
      env: { PDA_T_KEY: "k1" },
    });
    expect(config.servers[0]).toMatchObject({
      id: "local",
      args: [join(dir, "proj/s.js")],
      env: { K: "k1" },
    });
    expect(config.servers[1]).toMatchObject({ id: "old", transport: "sse", url: "http://127.0.0.1:9/sse" });
    const input = write(
      "p2/.vscode/mcp.json",
      '{\n  "servers": {\n    "x": {\n      "command": "node",\n      "env": { "K": "${input:key}" }\n    }\n  }\n}',
    );
    expect(configError(() => loadHubConfig(input))).toMatch(
      /mcp\.json:5: servers\.x\.env\.K: \$\{input:key\} is asked by VS Code .* \$\{env:NAME\}/,
    );
    expect(
      configError(() => parseHubConfig("c.yaml", "servers:\n  - id: x\n    command: ${nope:x}\n")),
    ).toMatch(/c\.yaml:3: servers\.0\.command: unknown variable \$\{nope:x\}/);
  });

  it("VS Code settings.json (mcp.servers), Gemini CLI (url is SSE, httpUrl is HTTP, ms), Windsurf serverUrl", () => {
    const settings = write(
      "settings.json",
      '{ "editor.fontSize": 14, "mcp": { "servers": { "a": { "command": "node" } } } }',
    );
    expect(loadHubConfig(settings).servers.map((s) => s.id)).toEqual(["a"]);
    const gemini = write(
      ".gemini/settings.json",
      JSON.stringify({
        mcpServers: {
          sse: { url: "http://127.0.0.1:9/sse", timeout: 5000 },
          http: { httpUrl: "http://127.0.0.1:9/mcp" },
        },
      }),
    );
    expect(loadHubConfig(gemini).servers.map((s) => [s.id, s.transport, s.timeout_ms])).toEqual([
      ["sse", "sse", 5000],
      ["http", "http", 30_000],
    ]);
    const windsurf = write(
      "mcp_config.json",
      JSON.stringify({ mcpServers: { w: { serverUrl: "http://127.0.0.1:9/mcp" } } }),
    );
    expect(loadHubConfig(windsurf).servers[0]).toMatchObject({
      url: "http://127.0.0.1:9/mcp",
      transport: "http",
    });
  });

  it("a shape pda does not know is an error that names the shapes it reads", () => {
    expect(configError(() => parseHubConfig("x.json", '{ "tools": [] }'))).toMatch(
      /x\.json: not an MCP server config pda knows: expected `servers:` as a list \(pda\), `mcpServers`/,
    );
  });
});

describe("one hub, three transports", () => {
  it("a legacy SSE server, a stdio server named with a space, approvals from needs_approval * and auto_approve", async () => {
    const child = spawn(process.execPath, [SSE_SERVER], { stdio: ["ignore", "pipe", "inherit"] });
    children.push(child);
    const url = await listeningUrl(child, "sse");
    const hub = await MultiMCP.start({
      mcpServers: {
        old: { type: "sse", url },
        "my math": {
          command: process.execPath,
          args: [MATH_SERVER],
          needs_approval: ["*"],
          autoApprove: ["add"],
        },
      },
    });
    try {
      expect(hub.status().map((s) => [s.id, s.transport, s.state])).toEqual([
        ["old", "sse", "ready"],
        ["my math", "stdio", "ready"],
      ]);
      expect(await hub.call("old.shout", { text: "hi" })).toBe("HI");
      expect(await hub.call("my math.add", { a: 2, b: 3 })).toBe(5);
      const approval = Object.fromEntries(
        hub
          .tools()
          .filter((t) => t.server === "my math")
          .map((t) => [t.name, t.needsApproval === true]),
      );
      expect(approval.add).toBe(false);
      expect(approval.multiply).toBe(true);
    } finally {
      await hub.close();
    }
  });

  it("pda servers with a config folder that has no mcp_server_config.yaml lists the bundled servers", () => {
    const folder = join(dir, "only-profiles");
    mkdirSync(folder, { recursive: true });
    const r = spawnSync(
      process.execPath,
      [
        join(PACKAGE_ROOT, "dist/main.js"),
        "--db",
        join(dir, "pda.db"),
        "--config",
        folder,
        "servers",
        "--json",
      ],
      { encoding: "utf8", timeout: 120_000, env: { ...process.env, NO_COLOR: "1" } },
    );
    expect(r.stderr).toBe("");
    const ids = (JSON.parse(r.stdout) as { id: string }[]).map((s) => s.id);
    expect(ids).toContain("math");
  });
});
