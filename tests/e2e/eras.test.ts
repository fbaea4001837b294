/**
 * Both MCP eras in one `pda run` session: a server written with SDK v2 speaking 2026-07-28 (its question to
 * the person arrives as an `input_required` result) beside a 2025-era SDK v1 server; then `pda servers` shows
 * the revision each speaks, from the era kept with the cached tool lists.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { stringify } from "yaml";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../core/index.js";
import { achieved, code, snap } from "../../agent/tests/harness.js";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-e2e-eras-"));
  writeFileSync(
    join(dir, "mcp_server_config.yaml"),
    stringify({
      servers: [
        {
          id: "modern",
          command: process.execPath,
          args: [join(PACKAGE_ROOT, "dist/mcp_servers/testing/modern_server.js")],
          protocol: "auto",
        },
        {
          id: "faulty",
          command: process.execPath,
          args: [join(PACKAGE_ROOT, "dist/mcp_servers/testing/fault_server.js")],
        },
      ],
    }),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function pda(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      [join(PACKAGE_ROOT, "dist/main.js"), "--config", dir, "--db", join(dir, "pda.db"), ...args],
      { env: { ...process.env, NO_COLOR: "1" }, timeout: 90_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

it("a modern-era and a legacy server in one session, and pda servers names the revision each speaks", async () => {
  const source = [
    'const a = await modern.echo({ text: "new" });',
    'const b = await faulty.echo({ text: "old" });',
    'const c = await modern.confirm({ action: "deploy" });',
    "return { a, b, c };",
  ].join("\n");
  const model = join(dir, "model.yaml");
  writeFileSync(
    model,
    stringify({
      perception: [snap(), achieved("done")],
      decision: [code(["Step 0: use both servers"], 0, source)],
    }),
  );
  const answers = join(dir, "answers.yaml");
  writeFileSync(
    answers,
    stringify({
      elicitation: [{ action: "accept", content: { ok: true }, expect: "Go ahead with deploy?" }],
    }),
  );
  const r = await pda("run", "use both", "--model", `scripted:${model}`, "--hil", `scripted:${answers}`);
  // The answer alone on stdout, the live trace on stderr (with no error or warning line in it).
  expect({ code: r.code, tail: r.code ? r.stderr.slice(-800) : "" }).toEqual({ code: 0, tail: "" });
  expect(r.stdout.trim()).toBe("done");
  expect(r.stderr).not.toMatch(/^(error|warning)\b/im);
  expect(r.stderr).toMatch(/"a":"new"/);
  expect(r.stderr).toMatch(/"b":"old"/);
  expect(r.stderr).toMatch(/"confirmed":true/);

  const sqlite = new Database(join(dir, "pda.db"), { readonly: true });
  try {
    expect(sqlite.prepare("SELECT kind, answered_by FROM human_inputs").all()).toEqual([
      { kind: "elicitation", answered_by: "scripted" },
    ]);
  } finally {
    sqlite.close();
  }

  const json = await pda("servers", "--json");
  expect(json.code).toBe(0);
  const status = JSON.parse(json.stdout) as { id: string; era?: string }[];
  expect(status.map((s) => [s.id, s.era])).toEqual([
    ["modern", "modern"],
    ["faulty", "legacy"],
  ]);
  const text = await pda("servers");
  expect(text.stdout).toMatch(/modern\s.*stdio 2026-07-28/);
  expect(text.stdout).toMatch(/faulty\s.*stdio 2025/);
});
