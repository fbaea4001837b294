/**
 * A server's forms and prompts outside `pda run` (issue #22): `pda call` and `pda exec` answer elicitations
 * through --hil (a policy that accepts a form's defaults, scripted answers merged over the defaults), and
 * CODE in `pda exec` reaches prompts and resource templates. Real child processes, real servers.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../core/index.js";
import { referenceServerBin } from "../mcp_servers/hub/tests/helpers.js";

const dir = mkdtempSync(join(tmpdir(), "pda-forms-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(
  join(dir, "mcp_server_config.yaml"),
  stringify({
    servers: [
      {
        id: "f",
        command: process.execPath,
        args: [join(PACKAGE_ROOT, "dist/mcp_servers/testing/fault_server.js")],
      },
      {
        id: "everything",
        command: process.execPath,
        args: [referenceServerBin("@modelcontextprotocol/server-everything"), "stdio"],
      },
    ],
  }),
);

function pda(args: string[], stdin?: string): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [join(PACKAGE_ROOT, "dist/main.js"), "--config", dir, "--db", join(dir, "pda.db"), ...args],
      { env: { ...process.env, NO_COLOR: "1" }, timeout: 120_000 },
      (e, out, err) => resolve({ code: e ? ((e as { code?: number }).code ?? 1) : 0, out, err }),
    );
    child.stdin!.end(stdin ?? "");
  });
}

describe("elicitation in pda call", () => {
  it("policy:defaults accepts a form with its schema's defaults", async () => {
    const r = await pda(["call", "f.settings", "--hil", "policy:defaults"]);
    expect(r.err).toBe("");
    expect(JSON.parse(r.out)).toEqual({ action: "accept", content: { colour: "blue", size: 3 } });
  });

  it("policy:defaults declines a form whose required field has no default", async () => {
    const r = await pda(["call", "f.ask", '{"message": "Your name?"}', "--hil", "policy:defaults"]);
    expect(JSON.parse(r.out)).toMatchObject({ action: "decline" });
  });

  it("a scripted accept is merged over the defaults", async () => {
    const answers = join(dir, "answers.yaml");
    writeFileSync(answers, stringify({ elicitation: [{ action: "accept", content: { size: 5 } }] }));
    const r = await pda(["call", "f.settings", "--hil", `scripted:${answers}`]);
    expect(JSON.parse(r.out)).toEqual({ action: "accept", content: { colour: "blue", size: 5 } });
  });
});

describe("pda exec reaches prompts and resources", () => {
  it("prompts.list/get and resources.templates/list from CODE", async () => {
    const code = [
      'const prompts_ = await prompts.list("everything");',
      "const simple = prompts_.find((p) => !(p.arguments ?? []).some((a) => a.required));",
      'const got = await prompts.get("everything", simple.name);',
      'const templates = await resources.templates("everything");',
      "const all = await resources.list();",
      "return { prompts: prompts_.length, server: simple.server, messages: got.messages.length, templates: templates.length, resources: all.length };",
    ].join("\n");
    const r = await pda(["exec", "-"], code);
    expect(r.code).toBe(0);
    const result = JSON.parse(r.out) as { ok: boolean; value: Record<string, number | string> };
    expect(result.ok).toBe(true);
    expect(result.value.server).toBe("everything");
    expect(result.value.prompts).toBeGreaterThan(0);
    expect(result.value.messages).toBeGreaterThan(0);
    expect(result.value.templates).toBeGreaterThan(0);
    expect(result.value.resources).toBeGreaterThan(0);
  });
});

describe("pda resources and pda prompts", () => {
  it("list and read a server's resources and prompts; an unknown server is a usage error", async () => {
    const prompts = await pda(["prompts", "everything", "--json"]);
    expect(prompts.code).toBe(0);
    const list = JSON.parse(prompts.out) as { name: string; arguments?: { required?: boolean }[] }[];
    const simple = list.find((p) => !(p.arguments ?? []).some((a) => a.required))!;
    const got = await pda(["prompts", "get", "everything", simple.name]);
    expect(got.code).toBe(0);
    expect(got.out).toMatch(/^(user|assistant): \S/m);

    const resources = await pda(["resources", "everything", "--json"]);
    expect(resources.code).toBe(0);
    const { resources: rs, templates } = JSON.parse(resources.out) as {
      resources: { uri: string; mimeType?: string }[];
      templates: unknown[];
    };
    expect(templates.length).toBeGreaterThan(0);
    const text = rs.find((r) => r.mimeType?.startsWith("text/")) ?? rs[0]!;
    const read = await pda(["resources", "read", "everything", text.uri, "--json"]);
    expect(read.code).toBe(0);
    expect((JSON.parse(read.out) as { contents: { uri: string }[] }).contents[0]!.uri).toBe(text.uri);

    const unknown = await pda(["prompts", "nowhere"]);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/no server named "nowhere" \(known: f, everything\)/);
  });
});
