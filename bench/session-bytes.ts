/**
 * What a session costs on disk. Runs a batch of real sessions (the real loop, sandbox, math server over stdio
 * and store; the real @google/genai client against the fake Gemini server, no delay) into a fresh store, then
 * measures the bytes of every table and index (SQLite's dbstat, after VACUUM) per session. Beside it, in the
 * same run, the baseline: a copy of that store with each call's prompt put back inline in llm_calls.prompt,
 * as before migration 10 (one text per call, no prompt_texts). Prints JSON.
 *   node dist/bench/session-bytes.js [--queries 100] [--keep]
 * --keep leaves both stores in their folder (its path on stderr) to look into.
 */
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import { AgentLoop, type LoopDeps } from "../agent/index.js";
import { Profile } from "../config/index.js";
import { distPath } from "../core/index.js";
import { DEFAULT_RETRY, createProvider } from "../llm/index.js";
import { MultiMCP } from "../mcp_servers/index.js";
import { SessionStore } from "../memory/index.js";
import { runBatch } from "../performance/index.js";
import { fakeAgent } from "../performance/testing/fake-agent.js";
import { startFakeGemini } from "../testing/index.js";

const { values } = parseArgs({
  options: { queries: { type: "string", default: "100" }, keep: { type: "boolean", default: false } },
});
const N = Number(values.queries);

/** Bytes of each table and index after VACUUM, and their sum. */
function footprint(path: string): { total: number; by_table: Record<string, number> } {
  const db = new Database(path);
  try {
    db.exec("VACUUM");
    const rows = db
      .prepare("SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC")
      .all() as { name: string; bytes: number }[];
    return {
      total: rows.reduce((n, r) => n + r.bytes, 0),
      by_table: Object.fromEntries(rows.map((r) => [r.name, r.bytes])),
    };
  } finally {
    db.close();
  }
}

/** The store as before migration 10: every call's prompt text in its own row. */
function inlinePrompts(path: string): void {
  const db = new Database(path);
  try {
    const store = SessionStore.open(path);
    const calls = store.db.prepare("SELECT id, session_id FROM llm_calls ORDER BY id").all() as {
      id: number;
      session_id: string;
    }[];
    const bySession = new Map<string, string[]>();
    for (const s of new Set(calls.map((c) => c.session_id))) {
      bySession.set(
        s,
        store.llmCalls(s).map((c) => c.prompt),
      );
    }
    store.close();
    const seen = new Map<string, number>();
    const set = db.prepare("UPDATE llm_calls SET prompt = ?, prompt_parts = NULL WHERE id = ?");
    db.transaction(() => {
      for (const c of calls) {
        const i = seen.get(c.session_id) ?? 0;
        seen.set(c.session_id, i + 1);
        set.run(bySession.get(c.session_id)![i]!, c.id);
      }
      db.exec("DROP TABLE prompt_texts; ALTER TABLE llm_calls DROP COLUMN prompt_parts;");
    })();
  } finally {
    db.close();
  }
}

const dir = mkdtempSync(join(tmpdir(), "pda-bench-bytes-"));
const gemini = await startFakeGemini({ handler: fakeAgent() });
const hub = await MultiMCP.start({
  servers: [{ id: "math", command: process.execPath, args: [distPath("mcp_servers/math/server.js")] }],
});
try {
  const model = createProvider("gemini", {
    apiKey: "bench-key",
    baseUrl: gemini.url,
    retry: { ...DEFAULT_RETRY, max_retries: 0 },
  });
  const profile = Profile.parse({});
  const input = join(dir, "q.jsonl");
  writeFileSync(
    input,
    Array.from({ length: N }, (_, i) =>
      JSON.stringify({ query: `What is ${i + 1} + ${2 * i}?`, expected: String(3 * i + 1) }),
    ).join("\n"),
  );
  const db = join(dir, "pda.db");
  const store = SessionStore.open(db);
  const r = await runBatch(
    {
      input,
      out: join(dir, "out"),
      db,
      model: "gemini (fake)",
      concurrency: 4,
      hil: "policy:fail",
      memory: false,
    },
    {
      store,
      models: { perception: model, decision: model },
      profile,
      loop: (extra: Partial<LoopDeps>) =>
        new AgentLoop({ models: extra.models!, host: hub, recorder: store, profile, ...extra }),
    },
  );
  const sessions = store.db.prepare("SELECT count(*) FROM sessions").pluck().get() as number;
  const calls = store.db.prepare("SELECT count(*) FROM llm_calls").pluck().get() as number;
  const promptBytes = store.db.prepare("SELECT sum(prompt_bytes) FROM llm_calls").pluck().get() as number;
  store.close();
  const inline = join(dir, "inline.db");
  copyFileSync(db, inline);
  inlinePrompts(inline);
  const now = footprint(db);
  const before = footprint(inline);
  const perSession = (b: number) => Math.round(b / sessions);
  process.stdout.write(
    `${JSON.stringify(
      {
        bench: "session-bytes",
        queries: N,
        succeeded: r.outcomes.filter((o) => o.status === "succeeded").length,
        sessions,
        model_calls: calls,
        prompt_bytes_sent_per_session: perSession(promptBytes),
        bytes_per_session: perSession(now.total),
        baseline_inline_prompts_bytes_per_session: perSession(before.total),
        ratio: +(now.total / before.total).toFixed(3),
        tables_per_session: Object.fromEntries(
          Object.entries(now.by_table).map(([t, b]) => [t, perSession(b)]),
        ),
        baseline_tables_per_session: Object.fromEntries(
          Object.entries(before.by_table).map(([t, b]) => [t, perSession(b)]),
        ),
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await hub.close();
  await gemini.close();
  if (values.keep) console.error(`kept: ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
