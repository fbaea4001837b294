/**
 * A server that is down is said, not hidden: the live trace, the decision prompt, the session log and
 * `pda show` name it with the reason, and a run with every server down ends with exit 3 saying so, before
 * any model call. Real `pda` processes, real servers, a real SQLite file.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { distPath, PACKAGE_ROOT } from "../../core/index.js";
import { cliFolder, type CliFolder } from "../../cli/harness.js";
import { SessionStore } from "../../memory/index.js";

const CALCULATOR = join(PACKAGE_ROOT, "config/demo/calculator.yaml");
const QUERY = "What is 32 + 5 - 3 * 2";
const broken = {
  id: "broken",
  description: "a server that will not start",
  command: process.execPath,
  args: [distPath("mcp_servers/testing/fault_server.js"), "--exit-at-start"],
};
const math = { id: "math", command: process.execPath, args: [distPath("mcp_servers/math/server.js")] };

describe("servers that are down", () => {
  let cli: CliFolder;
  beforeEach(() => {
    cli = cliFolder("pda-down-");
  });
  afterEach(() => cli.close());
  const servers = (list: object[]) =>
    writeFileSync(join(cli.config, "mcp_server_config.yaml"), stringify({ servers: list }));

  it("are named in the trace, the decision prompt, the session log and pda show", async () => {
    servers([math, broken]);
    const run = await cli.pda(["run", QUERY, "--model", `scripted:${CALCULATOR}`]);
    expect(run.stderr).not.toMatch(/^(error|warning)/m);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/✗ server broken is down: could not start: the process exited with code 3/);
    expect(run.stdout).toBe("32 + 5 - 3 * 2 = 31\n");

    const db = new Database(join(cli.dir, "pda.db"), { readonly: true });
    const { id } = db
      .prepare("SELECT session_id AS id FROM llm_calls WHERE role = 'decision' LIMIT 1")
      .get() as { id: string };
    db.close();
    // Through the store: the prompt is kept once per distinct paragraph (migration 10), not in the row.
    const store = SessionStore.open(join(cli.dir, "pda.db"));
    const prompt = store.llmCalls(id).find((c) => c.role === "decision")!.prompt;
    store.close();
    expect(prompt).toMatch(
      /Unavailable now[^\n]*\n- broken \(a server that will not start\): could not start/,
    );
    // The math tools are offered; the broken server is not among them.
    expect(prompt).toMatch(/multiply\(a: number, b: number\)/);

    const show = await cli.pda(["show", id]);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/servers\n.* broken down: could not start: the process exited with code 3/);
  });

  it("all of them: exit 3 with the reason, and no model call", async () => {
    servers([broken]);
    const run = await cli.pda(["run", QUERY, "--model", `scripted:${CALCULATOR}`, "--json"]);
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(
      /every configured MCP server is down: broken \(could not start: the process exited/,
    );
    const db = new Database(join(cli.dir, "pda.db"), { readonly: true });
    const session = db.prepare("SELECT status, status_reason FROM sessions").get() as {
      status: string;
      status_reason: string;
    };
    const calls = db.prepare("SELECT count(*) AS n FROM llm_calls").get() as { n: number };
    db.close();
    expect(session.status).toBe("failed");
    expect(session.status_reason).toMatch(/every configured MCP server is down/);
    expect(calls.n).toBe(0);
  });
});
