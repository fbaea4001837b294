/**
 * MCP beyond tools, through `pda run`: a server's log messages land in the session log, its progress shows in
 * the live trace, and its elicitation/create request is answered by the human channel.
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
  dir = mkdtempSync(join(tmpdir(), "pda-e2e-mcp-"));
  writeFileSync(
    join(dir, "mcp_server_config.yaml"),
    stringify({
      servers: [
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

it("keeps server logs with the session, shows progress, and hands elicitation to the human", async () => {
  const source = [
    'await log({ level: "info", message: "hello from the server" });',
    "await slow({ ms: 200, steps: 4 });",
    'return await ask({ message: "What is your name?" });',
  ].join("\n");
  const model = join(dir, "model.yaml");
  writeFileSync(
    model,
    stringify({
      perception: [snap(), achieved("Ada")],
      decision: [code(["Step 0: ask the server"], 0, source)],
    }),
  );
  const answers = join(dir, "answers.yaml");
  writeFileSync(
    answers,
    stringify({
      elicitation: [{ action: "accept", content: { name: "Ada" }, expect: "What is your name?" }],
    }),
  );
  const db = join(dir, "pda.db");

  const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile(
      process.execPath,
      [
        join(PACKAGE_ROOT, "dist/main.js"),
        "--config",
        dir,
        "--db",
        db,
        "run",
        "who am I?",
        "--model",
        `scripted:${model}`,
        "--hil",
        `scripted:${answers}`,
      ],
      { env: { ...process.env, NO_COLOR: "1" }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
  // The trace is on stderr: no error or warning in it, and its end when the run failed.
  expect({
    code: r.code,
    errors: r.stderr.match(/^(error|warning).*$/gm) ?? [],
    tail: r.code ? r.stderr.slice(-600) : "",
  }).toEqual({ code: 0, errors: [], tail: "" });
  expect(r.stderr).toMatch(/… faulty\.slow 1\/4 step 1 of 4/);
  expect(r.stderr).toMatch(/result .*"action":"accept".*"Ada"/);

  const sqlite = new Database(db, { readonly: true });
  try {
    const session = sqlite.prepare("SELECT id FROM sessions").get() as { id: string };
    const logs = sqlite
      .prepare("SELECT session_id, server, level, message FROM server_logs WHERE level = 'info'")
      .all();
    expect(logs).toEqual([
      { session_id: session.id, server: "faulty", level: "info", message: "hello from the server" },
    ]);
    const human = sqlite
      .prepare("SELECT kind, answer, answered_by FROM human_inputs WHERE session_id = ?")
      .all(session.id);
    expect(human).toEqual([
      { kind: "elicitation", answer: 'accept: {"name":"Ada"}', answered_by: "scripted" },
    ]);
  } finally {
    sqlite.close();
  }
});
