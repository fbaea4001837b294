/**
 * How a batch run commits with group commit on (as `pda batch` opens its store): the rows of a run are not a
 * COMMIT each, and the CSVs never show a row another reader of the store cannot see yet. The real loop, the
 * math server over stdio, the real Gemini client against the fake server, a real store file.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { parse } from "csv-parse/sync";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AgentLoop, type LoopDeps } from "../../agent/index.js";
import { Profile } from "../../config/index.js";
import { distPath } from "../../core/index.js";
import { DEFAULT_RETRY, createProvider } from "../../llm/index.js";
import { MultiMCP } from "../../mcp_servers/index.js";
import { SessionStore } from "../../memory/index.js";
import { startFakeGemini, type FakeGemini } from "../../testing/index.js";
import { runBatch, type BatchOptions } from "../index.js";
import { fakeAgent } from "../testing/fake-agent.js";

let hub: MultiMCP;
let dir: string;
let gemini: FakeGemini;
let store: SessionStore;
let reader: Database.Database;

beforeAll(async () => {
  hub = await MultiMCP.start({
    servers: [{ id: "math", command: process.execPath, args: [distPath("mcp_servers/math/server.js")] }],
  });
});
afterAll(async () => hub.close());
afterEach(async () => {
  reader?.close();
  store?.close();
  await gemini?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A run of `n` queries over a store whose window is far longer than the test: only flushes commit. */
async function setup(n: number) {
  dir = mkdtempSync(join(tmpdir(), "pda-commits-"));
  gemini = await startFakeGemini({ handler: fakeAgent() });
  const input = join(dir, "q.jsonl");
  writeFileSync(
    input,
    Array.from({ length: n }, (_, i) =>
      JSON.stringify({
        id: `q${i + 1}`,
        query: `What is ${i + 1} + ${i + 1}?`,
        expected: String(2 * (i + 1)),
      }),
    ).join("\n"),
  );
  const path = join(dir, "pda.db");
  store = SessionStore.open(path, { groupCommitMs: 3_600_000 });
  reader = new Database(path, { readonly: true });
  // Every COMMIT the store's connection runs (group commit prepares its COMMIT on first use, after open).
  let commits = 0;
  const prepare = store.db.prepare.bind(store.db);
  store.db.prepare = ((sql: string) => {
    const st = prepare(sql);
    if (!/^\s*COMMIT\b/i.test(sql)) return st;
    const run = st.run.bind(st);
    return Object.assign(Object.create(st) as typeof st, {
      run: (...args: unknown[]) => {
        commits += 1;
        return run(...args);
      },
    });
  }) as typeof store.db.prepare;
  const model = createProvider("gemini", {
    apiKey: "k",
    baseUrl: gemini.url,
    retry: { ...DEFAULT_RETRY, max_retries: 0 },
  });
  const profile = Profile.parse({});
  const s = store;
  const deps = {
    store: s,
    models: { perception: model, decision: model },
    profile,
    loop: (extra: Partial<LoopDeps>) =>
      new AgentLoop({ models: extra.models!, host: hub, recorder: s, profile, ...extra }),
  };
  const opts: BatchOptions = {
    input,
    out: join(dir, "out"),
    db: path,
    model: "gemini",
    concurrency: 2,
    hil: "policy:fail",
    memory: false,
    flushMs: 0,
  };
  return { deps, opts, commits: () => commits };
}

const committedDone = () =>
  (reader.prepare("SELECT count(*) AS n FROM batch_items WHERE status = 'done'").get() as { n: number }).n;

describe("batch commits", () => {
  it("a run's rows share commits: fewer COMMITs than queries, not one per row and per state", async () => {
    const n = 10;
    const { deps, opts, commits } = await setup(n);
    // One CSV rewrite during the run (the first row's; the next would be a minute later).
    const r = await runBatch({ ...opts, flushMs: 60_000 }, deps);
    expect(r.outcomes.filter((o) => o.status === "succeeded" && o.correct)).toHaveLength(n);
    // Was 3 a query (the pending row at the start, "running", "done"): the run, its rows, one rewrite, finish.
    expect(commits()).toBeLessThan(n);
    expect(committedDone()).toBe(n);
  });

  it("every row a CSV rewrite shows is committed: another reader of the store sees it done", async () => {
    // The CSVs rewritten after every row (flushMs 0), each right after the row is saved.
    const { deps, opts } = await setup(6);
    const seen: Array<{ csv: number; committed: number }> = [];
    const r = await runBatch(
      {
        ...opts,
        onEvent: (e) => {
          if (e.type !== "flush") return;
          const csv = (
            parse(readFileSync(join(opts.out, "test_queries_output.csv"), "utf8"), {
              columns: true,
            }) as unknown[]
          ).length;
          seen.push({ csv, committed: committedDone() });
        },
      },
      deps,
    );
    expect(r.outcomes).toHaveLength(6);
    expect(seen.length).toBeGreaterThan(0);
    for (const s of seen) expect(s.committed).toBeGreaterThanOrEqual(s.csv);
    expect(seen.at(-1)!.csv).toBe(6);
  });
});
