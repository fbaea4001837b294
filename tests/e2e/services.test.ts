/** What CODE reaches beside the tools, through `pda run`: memory.search over past sessions, MCP resources. */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../core/index.js";
import { achieved, code, snap } from "../../agent/tests/harness.js";
import { referenceServerBin } from "../../mcp_servers/hub/tests/helpers.js";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-e2e-services-"));
  writeFileSync(
    join(dir, "mcp_server_config.yaml"),
    stringify({
      servers: [
        {
          id: "math",
          command: process.execPath,
          args: [join(PACKAGE_ROOT, "dist/mcp_servers/math/server.js")],
        },
        {
          id: "everything",
          command: process.execPath,
          args: [referenceServerBin("@modelcontextprotocol/server-everything"), "stdio"],
        },
      ],
    }),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(query: string, script: unknown): Promise<{ code: number; out: string; err: string }> {
  const model = join(dir, `m${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(model, stringify(script));
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      [
        join(PACKAGE_ROOT, "dist/main.js"),
        "--config",
        dir,
        "--db",
        join(dir, "pda.db"),
        "run",
        query,
        "--model",
        `scripted:${model}`,
        "--json",
      ],
      { env: { ...process.env, NO_COLOR: "1" }, timeout: 60_000 },
      (e, out, err) => resolve({ code: e ? ((e as { code?: number }).code ?? 1) : 0, out, err }),
    ),
  );
}

it("memory.search finds a past session from CODE, and resources can be listed and read", async () => {
  const first = await run("What is 32 + 5 - 3 * 2", {
    perception: [snap(), achieved("31")],
    decision: [code(["Step 0: compute"], 0, "return await subtract(await add(32, 5), await multiply(3, 2))")],
  });
  expect(first.code).toBe(0);

  const source = [
    'const hits = await memory.search("32 + 5 - 3 * 2");',
    'const list = await resources.list("everything");',
    "const one = await resources.read(list[0].server, list[0].uri);",
    "return { hit: hits[0].final_answer, kind: hits[0].kind, resources: list.length, read: one.contents.length > 0 };",
  ].join("\n");
  const second = await run("What did we get for 32 + 5 - 3 * 2 last time?", {
    perception: [snap(), achieved("31, as before")],
    decision: [code(["Step 0: look in memory"], 0, source)],
  });
  expect({ code: second.code, err: second.err }).toEqual({ code: 0, err: "" });
  const summary = JSON.parse(second.out);
  expect(summary).toMatchObject({ status: "succeeded", tool_calls: 0 });
  const db = await import("better-sqlite3");
  const sqlite = new db.default(join(dir, "pda.db"), { readonly: true });
  try {
    const row = sqlite
      .prepare("SELECT record_json FROM steps WHERE session_id = ?")
      .get(summary.session_id) as { record_json: string };
    const value = JSON.parse(row.record_json).execution_result.value;
    expect(value).toMatchObject({ hit: "31", kind: "solution", read: true });
    expect(value.resources).toBeGreaterThan(0);
  } finally {
    sqlite.close();
  }
});
