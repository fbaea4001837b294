/**
 * MCP sampling through `pda run`, `pda call` and `pda exec`: a real stdio server's tool asks pda's model
 * (`sampling/createMessage`); the scripted model answers under role "sampling" once the person (a scripted
 * --hil) approves; in a session the call is an llm_calls row and counts in its usage. Refused without approval,
 * or when the budget is spent.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { SessionStore } from "../../memory/index.js";
import { stringify } from "yaml";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../core/index.js";
import { achieved, code, snap } from "../../agent/tests/harness.js";

let dir: string;
const SERVER = join(PACKAGE_ROOT, "dist/mcp_servers/testing/sampling_server.js");

function config(folder: string, sampling?: "ask" | "allow" | "deny"): void {
  writeFileSync(
    join(folder, "mcp_server_config.yaml"),
    stringify({
      servers: [{ id: "asker", command: process.execPath, args: [SERVER], ...(sampling && { sampling }) }],
    }),
  );
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-e2e-sampling-"));
  config(dir);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string, value: unknown) => {
  const path = join(dir, `${name}-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(path, stringify(value));
  return path;
};

function run(
  configDir: string,
  script: unknown,
  hil: string,
): Promise<{ code: number; out: string; err: string }> {
  const args = [
    join(PACKAGE_ROOT, "dist/main.js"),
    "--config",
    configDir,
    "--db",
    join(dir, "pda.db"),
    "run",
    "What is the capital of France? Ask the model tool.",
    "--model",
    `scripted:${file("model", script)}`,
    "--hil",
    hil,
    "--json",
  ];
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      args,
      { env: { ...process.env, NO_COLOR: "1" }, timeout: 60_000 },
      (e, out, err) => resolve({ code: e ? ((e as { code?: number }).code ?? 1) : 0, out, err }),
    ),
  );
}

function rows<T>(sql: string, ...params: unknown[]): T[] {
  const db = new Database(join(dir, "pda.db"), { readonly: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

const ASK = 'return await asker.ask_model({ question: "What is the capital of France?" });';

it("a server's sampling request is approved by the person and answered by the model, logged as role sampling", async () => {
  const r = await run(
    dir,
    {
      perception: [snap(), achieved("Paris")],
      decision: [code(["Step 0: ask the model tool"], 0, ASK)],
      sampling: [{ text: "Paris is the capital of France." }],
    },
    `scripted:${file("hil", { approval: [{ choice: "allow_once", expect: "sampling/createMessage" }] })}`,
  );
  expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
  const summary = JSON.parse(r.out);
  expect(summary.status).toBe("succeeded");

  const [step] = rows<{ record_json: string }>(
    "SELECT record_json FROM steps WHERE session_id = ?",
    summary.session_id,
  );
  expect(JSON.parse(step!.record_json).execution_result.value).toEqual({
    answer: "Paris is the capital of France.",
    model: expect.any(String),
  });

  const store = SessionStore.open(join(dir, "pda.db"));
  const calls = store.llmCalls(summary.session_id);
  store.close();
  expect(calls.map((c) => c.role)).toEqual(["perception", "decision", "sampling", "perception"]);
  const sampling = calls.find((c) => c.role === "sampling")!;
  expect(sampling).toMatchObject({
    ok: true,
    provider: "scripted",
    value: { text: "Paris is the capital of France." },
  });
  expect(sampling.prompt).toContain("What is the capital of France?");
  expect(sampling.prompt).toContain("Answer in one short sentence.");
  // The session's usage counts it beside the loop's own calls.
  const [session] = rows<{ llm_calls: number }>(
    "SELECT llm_calls FROM sessions WHERE id = ?",
    summary.session_id,
  );
  expect(session!.llm_calls).toBe(4);
  const asked = rows<{ kind: string; question: string; answer: string }>(
    "SELECT kind, question, answer FROM human_inputs WHERE session_id = ?",
    summary.session_id,
  );
  expect(asked).toEqual([
    {
      kind: "approval",
      question: expect.stringContaining("asker.sampling/createMessage"),
      answer: "allow_once",
    },
  ]);
});

it("denied by the person, the server gets a refusal and the model is not called", async () => {
  const r = await run(
    dir,
    {
      perception: [snap(), achieved("refused")],
      decision: [
        code(
          ["Step 0: ask the model tool"],
          0,
          "try { " + ASK + " } catch (e) { return String(e.message); }",
        ),
      ],
    },
    `scripted:${file("hil", { approval: ["deny"] })}`,
  );
  expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
  const summary = JSON.parse(r.out);
  const [step] = rows<{ record_json: string }>(
    "SELECT record_json FROM steps WHERE session_id = ?",
    summary.session_id,
  );
  expect(JSON.parse(step!.record_json).execution_result.value).toContain(
    "sampling not approved: the person denied it",
  );
  const roles = rows<{ role: string }>("SELECT role FROM llm_calls WHERE session_id = ?", summary.session_id);
  expect(roles.map((c) => c.role)).not.toContain("sampling");
});

it("`sampling: allow` answers unattended runs without asking; a spent model-call budget refuses", async () => {
  const allowDir = mkdtempSync(join(dir, "allow-"));
  config(allowDir, "allow");
  // Three model calls allowed: perception and decision spend two, the first sampling the last one, so the
  // second sampling of the same step is over budget.
  writeFileSync(
    join(allowDir, "profiles.yaml"),
    stringify({ default: "tight", profiles: { tight: { budgets: { max_llm_calls: 3 } } } }),
  );
  const twice = [ASK.replace("return ", ""), "try { " + ASK + " } catch (e) { return String(e.message); }"];
  const tight = await run(
    allowDir,
    {
      perception: [snap()],
      decision: [code(["Step 0: ask the model tool twice"], 0, twice.join("\n"))],
      sampling: [{ text: "Paris." }],
    },
    "policy:fail",
  );
  const summary = JSON.parse(tight.out);
  const [step] = rows<{ record_json: string }>(
    "SELECT record_json FROM steps WHERE session_id = ?",
    summary.session_id,
  );
  expect(JSON.parse(step!.record_json).execution_result.value).toContain("model-call budget");

  rmSync(join(allowDir, "profiles.yaml"));
  const r = await run(
    allowDir,
    {
      perception: [snap(), achieved("Paris")],
      decision: [code(["Step 0: ask the model tool"], 0, ASK)],
      sampling: [{ text: "Paris." }],
    },
    "policy:fail",
  );
  expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
  const ok = JSON.parse(r.out);
  expect(ok.status).toBe("succeeded");
  const asked = rows("SELECT kind FROM human_inputs WHERE session_id = ?", ok.session_id);
  expect(asked).toEqual([]);
});

/** `pda <args>` against the config folder, without a terminal; exit code, stdout and stderr. */
function pda(
  configDir: string,
  args: string[],
  stdin?: string,
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [join(PACKAGE_ROOT, "dist/main.js"), "--config", configDir, "--db", join(dir, "pda.db"), ...args],
      { env: { ...process.env, NO_COLOR: "1" }, timeout: 60_000 },
      (e, out, err) => resolve({ code: e ? ((e as { code?: number }).code ?? 1) : 0, out, err }),
    );
    child.stdin?.end(stdin ?? "");
  });
}

const QUESTION = '{"question": "What is the capital of France?"}';

it("pda call: a server's sampling request is answered by --model once the person approves", async () => {
  const model = `scripted:${file("model", { sampling: [{ text: "Paris is the capital of France." }] })}`;
  const hil = `scripted:${file("hil", { approval: [{ choice: "allow_once", expect: "sampling/createMessage" }] })}`;
  const r = await pda(dir, ["call", "asker.ask_model", QUESTION, "--model", model, "--hil", hil]);
  expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
  expect(JSON.parse(r.out)).toEqual({ answer: "Paris is the capital of France.", model: expect.any(String) });
});

it("pda call: with sampling: ask and no person to approve, the server is refused with the reason and the model is not called", async () => {
  // No reply for the model: were it called, its empty script would fail the call with another message.
  const model = `scripted:${file("model", { sampling: [] })}`;
  const r = await pda(dir, ["call", "asker.ask_model", QUESTION, "--model", model]);
  expect(r.code).toBe(1);
  expect(r.err).toContain("sampling not approved: no person to answer (policy:fail)");
  expect(r.err).toContain('server "asker" has sampling: ask');
  expect(r.err).not.toContain("no more");
});

it("pda exec: a server with sampling: allow is answered unattended by --model", async () => {
  const allowDir = mkdtempSync(join(dir, "exec-allow-"));
  config(allowDir, "allow");
  const model = `scripted:${file("model", { sampling: [{ text: "Paris." }] })}`;
  const r = await pda(allowDir, ["exec", "-", "--model", model], ASK);
  expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
  expect(JSON.parse(r.out)).toMatchObject({
    ok: true,
    value: { answer: "Paris.", model: expect.any(String) },
  });
});
