/** Hub configuration: our YAML, the desktop mcpServers JSON, ${VAR}, relative paths, errors with file:line:field. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, DEFAULT_CONFIG_DIR, PACKAGE_ROOT } from "../../../core/index.js";
import { MultiMCP, hubConfigFromObject, loadHubConfig, parseHubConfig } from "../../index.js";
import { MATH_SERVER, gone } from "./helpers.js";

const dir = mkdtempSync(join(tmpdir(), "pda-hub-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    expect((e as ConfigError).exitCode).toBe(2);
    return e as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

describe("hub config", () => {
  it("the bundled config points at the compiled math server, resolved against config/", () => {
    const config = loadHubConfig(join(DEFAULT_CONFIG_DIR, "mcp_server_config.yaml"));
    const math = config.servers.find((s) => s.id === "math")!;
    expect(math.enabled).toBe(true);
    expect(math.command).toBe("node");
    expect(math.args).toEqual([join(PACKAGE_ROOT, "dist/mcp_servers/math/server.js")]);
    expect(math.cwd).toBe(DEFAULT_CONFIG_DIR);
  });

  it("applies defaults, expands ${VAR} and ${VAR:-default}, resolves relative paths against the file", () => {
    const text = [
      "servers:",
      "  - id: a",
      "    command: ./bin/server",
      "    args: [../x.js, --flag, '${PDA_T_TOKEN}']",
      "    env: { KEY: '${PDA_T_MISSING:-fallback}' }",
      "  - id: b",
      "    url: http://127.0.0.1:${PDA_T_PORT}/mcp",
      "    headers: { Authorization: 'Bearer ${PDA_T_TOKEN}' }",
      "    enabled: false",
    ].join("\n");
    const env = { PDA_T_TOKEN: "secret", PDA_T_PORT: "8123" };
    const config = parseHubConfig("/etc/pda/hub.yaml", text, { env });
    const [a, b] = config.servers;
    expect(a).toMatchObject({
      command: "/etc/pda/bin/server",
      args: ["/etc/x.js", "--flag", "secret"],
      env: { KEY: "fallback" },
      cwd: "/etc/pda",
      enabled: true,
      timeout_ms: 30_000,
      deny: [],
      needs_approval: [],
    });
    expect(b).toMatchObject({
      url: "http://127.0.0.1:8123/mcp",
      headers: { Authorization: "Bearer secret" },
      enabled: false,
    });
  });

  it("names file, line and field for invalid config", () => {
    const text = [
      "servers:",
      "  - id: ok",
      "    command: node",
      "  - id: bad",
      "    command: node",
      "    timeout_ms: -5",
    ].join("\n");
    const e = configError(() => parseHubConfig("hub.yaml", text));
    expect(e.message).toMatch(/^hub\.yaml:6: servers\.1\.timeout_ms: /);
    const neither = configError(() =>
      parseHubConfig("hub.yaml", "servers:\n  - id: x\n    description: no transport\n"),
    );
    expect(neither.message).toMatch(/hub\.yaml:2: servers\.0: give either command/);
    const unknownKey = configError(() =>
      parseHubConfig("hub.yaml", "servers:\n  - id: x\n    command: node\n    comand: typo\n"),
    );
    expect(unknownKey.message).toMatch(/hub\.yaml:2: servers\.0: .*comand/);
    const dup = configError(() =>
      parseHubConfig("h.yaml", "servers:\n  - {id: x, command: a}\n  - {id: x, command: b}\n"),
    );
    expect(dup.message).toMatch(/h\.yaml:3: servers\.1\.id: duplicate server id "x"/);
    const unset = configError(() =>
      parseHubConfig("h.yaml", "servers:\n  - id: x\n    command: '${PDA_T_NOPE}'\n", { env: {} }),
    );
    expect(unset.message).toMatch(
      /h\.yaml:3: servers\.0\.command: environment variable PDA_T_NOPE is not set/,
    );
    const yamlSyntax = configError(() => parseHubConfig("h.yaml", "servers: [\n"));
    expect(yamlSyntax.message).toMatch(/^h\.yaml:\d+: /);
  });

  it("accepts the desktop clients' mcpServers JSON as it is", () => {
    const file = join(dir, "claude_desktop_config.json");
    writeFileSync(
      file,
      JSON.stringify(
        {
          mcpServers: {
            math: { command: "node", args: ["./math.js"], env: { A: "1" }, autoApprove: ["add"] },
            remote: { type: "http", url: "http://127.0.0.1:1/mcp", headers: { "X-Key": "k" } },
            off: { command: "node", disabled: true },
          },
          globalShortcut: "Ctrl+Space",
        },
        null,
        2,
      ),
    );
    const config = loadHubConfig(file);
    expect(config.servers.map((s) => [s.id, s.enabled])).toEqual([
      ["math", true],
      ["remote", true],
      ["off", false],
    ]);
    expect(config.servers[0]!.args).toEqual([join(dir, "math.js")]);
    expect(config.servers[1]).toMatchObject({ url: "http://127.0.0.1:1/mcp", headers: { "X-Key": "k" } });
    writeFileSync(
      file,
      '{\n  "mcpServers": {\n    "x": {\n      "type": "sse",\n      "url": 5\n    }\n  }\n}\n',
    );
    expect(configError(() => loadHubConfig(file)).message).toMatch(/:5: mcpServers\.x\.url: /);
  });

  it("auth.idp (cross-app access): expanded, and wrong shapes named by field", () => {
    const text = [
      "servers:",
      "  - id: crm",
      "    url: https://mcp.crm.example/mcp",
      "    auth:",
      "      idp:",
      "        issuer: https://idp.example.com",
      "        client_id: pda",
      "        client_secret: ${PDA_T_IDP_SECRET}",
    ].join("\n");
    const config = parseHubConfig("h.yaml", text, { env: { PDA_T_IDP_SECRET: "s3" } });
    expect(config.servers[0]!.auth).toEqual({
      idp: { issuer: "https://idp.example.com", client_id: "pda", client_secret: "s3" },
    });
    const noClient = configError(() =>
      parseHubConfig("h.yaml", text.replace("        client_id: pda\n", ""), {
        env: { PDA_T_IDP_SECRET: "s3" },
      }),
    );
    expect(noClient.message).toMatch(/h\.yaml:\d+: servers\.0\.auth\.idp\.client_id: /);
    const badIssuer = configError(() =>
      parseHubConfig("h.yaml", text.replace("https://idp.example.com", "idp"), {
        env: { PDA_T_IDP_SECRET: "s3" },
      }),
    );
    expect(badIssuer.message).toMatch(/servers\.0\.auth\.idp\.issuer: /);
    const typo = configError(() =>
      parseHubConfig("h.yaml", `${text}\n        tokenEndpoint: https://idp.example.com/t`, {
        env: { PDA_T_IDP_SECRET: "s3" },
      }),
    );
    expect(typo.message).toMatch(/servers\.0\.auth\.idp: .*tokenEndpoint/);
    const stdio = configError(() =>
      hubConfigFromObject({
        servers: [
          { id: "x", command: "node", auth: { idp: { issuer: "https://i.example", client_id: "c" } } },
        ],
      }),
    );
    expect(stdio.message).toMatch(/servers\.0\.auth: auth is for remote servers: it needs url/);
  });

  it("a config object is validated too", () => {
    const e = configError(() => hubConfigFromObject({ servers: [{ id: "has.dot", command: "x" }] }));
    expect(e.message).toMatch(/servers\.0\.id: a server name .* without a dot/);
    expect(hubConfigFromObject({ servers: [{ id: "has space", command: "x" }] }).servers[0]!.id).toBe(
      "has space",
    );
  });
});

describe("hub routing", () => {
  it("namespaces colliding names, keeps unique ones plain, honours allow lists and enabled", async () => {
    const hub = await MultiMCP.start({
      servers: [
        { id: "m1", command: process.execPath, args: [MATH_SERVER] },
        { id: "m2", command: process.execPath, args: [MATH_SERVER], allow: ["add", "cbrt"] },
        { id: "off", command: process.execPath, args: [MATH_SERVER], enabled: false },
      ],
    });
    try {
      const pids = hub.status().map((s) => s.pid);
      const add = hub.tools().filter((t) => t.name === "add");
      expect(add.map((t) => [t.qualified, t.unique])).toEqual([
        ["m1.add", false],
        ["m2.add", false],
      ]);
      expect(hub.tools().find((t) => t.qualified === "m1.mine")?.unique).toBe(true);
      expect(
        hub
          .tools()
          .filter((t) => t.server === "m2")
          .map((t) => t.name),
      ).toEqual(["add", "cbrt"]);
      expect(await hub.call("m2.add", { a: 1, b: 2 })).toBe(3);
      expect(await hub.call("mine", { a: 5, b: 1 })).toBe(3);
      await expect(hub.call("add", { a: 1, b: 2 })).rejects.toMatchObject({
        code: "TOOL_NOT_FOUND",
        message: expect.stringMatching(/ambiguous; use one of: m1\.add, m2\.add/),
      });
      await expect(hub.call("m2.mine", { a: 1, b: 2 })).rejects.toMatchObject({ code: "TOOL_NOT_FOUND" });
      await expect(hub.call("off.add", { a: 1, b: 2 })).rejects.toMatchObject({
        code: "SERVER_UNAVAILABLE",
        message: expect.stringMatching(/disabled/),
      });
      await expect(hub.call("m1.add", [1, 2] as unknown as Record<string, unknown>)).rejects.toMatchObject({
        code: "TOOL_INVALID_ARGS",
      });
      expect(hub.status().find((s) => s.id === "off")).toMatchObject({ state: "disabled", tools: 0 });
      await hub.close();
      expect(await gone(pids)).toEqual([]);
      await expect(hub.call("m1.add", { a: 1, b: 2 })).rejects.toMatchObject({ code: "SERVER_UNAVAILABLE" });
    } finally {
      await hub.close();
    }
  });

  it("fills schema defaults into a copy of the caller's arguments", async () => {
    const { validateArgs } = await import("../../../core/index.js");
    const schema = {
      type: "object",
      properties: { q: { type: "string" }, k: { type: "integer", default: 5 } },
      required: ["q"],
    };
    const args = { q: "x" };
    expect(validateArgs("t", schema, args)).toEqual({ q: "x", k: 5 });
    expect(args).toEqual({ q: "x" });
    const s2020 = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      ...schema,
      additionalProperties: false,
    };
    expect(() => validateArgs("t", s2020, { q: "x", extra: 1 })).toThrow(/unknown argument "extra"/);
  });
});
