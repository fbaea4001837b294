/**
 * runBatch in-process: the real loop, the real math server over stdio, a real store in a temp dir, the real
 * Gemini client against the fake server. Timeouts, Ctrl-C and resume, the judge, and fatal model errors.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AgentLoop, type LoopDeps } from "../../agent/index.js";
import { Profile } from "../../config/index.js";
import { ConfigError, distPath } from "../../core/index.js";
import { DEFAULT_RETRY, createProvider } from "../../llm/index.js";
import { MultiMCP } from "../../mcp_servers/index.js";
import { SessionStore } from "../../memory/index.js";
import { startFakeGemini, type FakeGemini, type FakeGeminiHandler } from "../../testing/index.js";
import { runBatch, type BatchEvent, type BatchOptions } from "../index.js";
import { fakeAgent, queryOf } from "../testing/fake-agent.js";

let hub: MultiMCP;
let dir: string;
let gemini: FakeGemini | undefined;
let store: SessionStore | undefined;

beforeAll(async () => {
  hub = await MultiMCP.start({
    servers: [{ id: "math", command: process.execPath, args: [distPath("mcp_servers/math/server.js")] }],
  });
});
afterAll(async () => hub.close());
afterEach(async () => {
  store?.close();
  store = undefined;
  await gemini?.close();
  gemini = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function setup(handler: FakeGeminiHandler, n: number) {
  dir = mkdtempSync(join(tmpdir(), "pda-runner-"));
  gemini = await startFakeGemini({ handler });
  const input = join(dir, "q.jsonl");
  const lines = Array.from({ length: n }, (_, i) =>
    JSON.stringify({ id: `q${i + 1}`, query: `What is ${i + 1} + ${i + 1}?`, expected: String(2 * (i + 1)) }),
  );
  writeFileSync(input, `${lines.join("\n")}\n`);
  store = SessionStore.open(join(dir, "pda.db"));
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
  const opts = (over: Partial<BatchOptions> = {}): BatchOptions => ({
    input,
    out: join(dir, "out"),
    db: join(dir, "pda.db"),
    model: "gemini",
    concurrency: 2,
    hil: "policy:fail",
    memory: false,
    flushMs: 0,
    ...over,
  });
  return { input, deps, opts };
}

const csvRows = (path: string) =>
  parse(readFileSync(path, "utf8"), { columns: true }) as Array<Record<string, string>>;

describe("runBatch", () => {
  it("a query over its timeout gets a row with Status timeout; the others are unaffected", async () => {
    const agent = fakeAgent();
    const { deps, opts } = await setup(
      (req) =>
        queryOf(req) === "What is 2 + 2?" && req.role === "decision"
          ? { json: {}, delayMs: 120_000 }
          : agent(req),
      3,
    );
    // 12 s, not less: the fast queries' budget must hold on a loaded machine, where the first query also pays
    // the lazy loads (4 s failed beside other heavy test files at load 40).
    const r = await runBatch(opts({ timeoutMs: 12_000 }), deps);
    expect(r.status).toBe("finished");
    expect(r.outcomes.map((o) => [o.key, o.status, o.correct])).toEqual([
      ["q1", "succeeded", true],
      ["q2", "timeout", false],
      ["q3", "succeeded", true],
    ]);
    expect(r.outcomes[1]!.status_reason).toMatch(/timed out/);
    expect(csvRows(r.files.queries).map((x) => x.Status)).toEqual(["succeeded", "timeout", "succeeded"]);
  });

  it("redacts secrets in the CSVs and the summary as the store does (query, output, passed-through columns)", async () => {
    const { input, deps, opts } = await setup(fakeAgent(), 1);
    const pat = "ghp_R4nd0mT0k3nV4lu3Xq7Lm9Tz2Wv5Rb8Nc4Hd";
    writeFileSync(
      input,
      `${JSON.stringify({ id: "q1", query: "What is 1 + 1? Log in with password=Tr0ub4dorXq", expected: "2", note: `token ${pat}` })}\n`,
    );
    const r = await runBatch(opts(), deps);
    expect(r.outcomes.map((o) => o.status)).toEqual(["succeeded"]);
    const [row] = csvRows(r.files.queries);
    expect(row!.Query).toBe("What is 1 + 1? Log in with password=[REDACTED:password]");
    expect(row!.note).toBe("token [REDACTED:github_token]");
    for (const f of [r.files.queries, r.files.tools, r.files.summary]) {
      const text = readFileSync(f, "utf8");
      expect(text, f).not.toContain("Tr0ub4dorXq");
      expect(text, f).not.toContain(pat);
    }
  });

  it("per-query budgets apply: a query over its model-call budget ends budget_exhausted, with a row", async () => {
    const { deps, opts } = await setup(fakeAgent(), 2);
    const r = await runBatch(opts({ budgets: { max_llm_calls: 2 } }), deps);
    expect(r.outcomes.map((o) => [o.status, o.correct, o.llm_calls])).toEqual([
      ["budget_exhausted", false, 2],
      ["budget_exhausted", false, 2],
    ]);
    expect(r.state.options.budgets).toEqual({ max_llm_calls: 2 });
  });

  it("Ctrl-C leaves the queries in flight pending; resume runs exactly those not done", async () => {
    const { deps, opts } = await setup(fakeAgent({ delayMs: 40 }), 8);
    const ac = new AbortController();
    const events: BatchEvent[] = [];
    const first = await runBatch(
      opts({
        signal: ac.signal,
        onEvent: (e) => {
          events.push(e);
          if (e.type === "item_end" && e.counts.done === 3) ac.abort(new Error("ctrl-c"));
        },
      }),
      deps,
    );
    expect(first.status).toBe("interrupted");
    expect(first.outcomes.length).toBeGreaterThanOrEqual(3);
    expect(first.remaining).toBe(8 - first.outcomes.length);
    expect(events.some((e) => e.type === "item_pending" && e.reason === "interrupted")).toBe(true);
    const afterStop = store!.batchItems(first.state.run_id);
    expect(afterStop.filter((i) => i.status === "done")).toHaveLength(first.outcomes.length);
    expect(afterStop.filter((i) => i.status === "running")).toHaveLength(0);
    expect(csvRows(first.files.queries)).toHaveLength(first.outcomes.length);

    const ran: string[] = [];
    const second = await runBatch(
      opts({ resume: true, onEvent: (e) => e.type === "item_start" && ran.push(e.key) }),
      deps,
    );
    expect(second.status).toBe("finished");
    expect(second.state.run_id).toBe(first.state.run_id);
    const doneFirst = new Set(first.outcomes.map((o) => o.key));
    expect(ran.sort()).toEqual(
      ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8"].filter((k) => !doneFirst.has(k)).sort(),
    );
    const rows = csvRows(second.files.queries);
    expect(rows.map((x) => x.Query)).toEqual(
      Array.from({ length: 8 }, (_, i) => `What is ${i + 1} + ${i + 1}?`),
    );
    expect(rows.every((x) => x.Status === "succeeded" && x.Correct === "true")).toBe(true);
    expect(second.state.invocations.map((i) => i.status)).toEqual(["interrupted", "finished"]);
    expect(readFileSync(second.files.summary, "utf8")).toMatch(/Done: 8 of 8/);
  });

  it("refuses to overwrite a run, and to resume one whose input changed", async () => {
    const { input, deps, opts } = await setup(fakeAgent(), 2);
    await runBatch(opts(), deps);
    const again = await runBatch(opts(), deps).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(ConfigError);
    expect((again as ConfigError).code).toBe("BATCH_EXISTS");
    expect((again as Error).message).toMatch(/2\/2 queries done/);
    writeFileSync(input, `${readFileSync(input, "utf8")}{"query": "What is 5 + 5?"}\n`);
    const changed = await runBatch(opts({ resume: true }), deps).catch((e: unknown) => e);
    expect((changed as ConfigError).code).toBe("BATCH_RESUME");
    // --force starts a new run in the same folder.
    const fresh = await runBatch(opts({ force: true }), deps);
    expect(fresh.outcomes).toHaveLength(3);
  });

  it("--judge asks the model, logs its call with the session, and falls back to matching if it fails", async () => {
    const agent = fakeAgent();
    let judged = 0;
    const { deps, opts } = await setup((req) => {
      if (/judge of a batch evaluation/.test(req.systemText)) {
        judged += 1;
        if (/What is 2 \+ 2/.test(req.userText)) return { status: 400, message: "bad judge request" };
        return { json: { correct: false, reason: "the judge disagrees" } };
      }
      return agent(req);
    }, 2);
    const r = await runBatch(opts({ judge: true }), deps);
    expect(judged).toBe(2);
    expect(r.outcomes.map((o) => [o.correct, o.correct_by])).toEqual([
      [false, "judge"],
      [true, "exact"],
    ]);
    expect(r.outcomes[0]!.judge_reason).toBe("the judge disagrees");
    expect(r.outcomes[1]!.judge_reason).toMatch(/the judge failed .*matched instead/);
    const calls = store!.llmCalls(r.outcomes[0]!.session_id);
    expect(calls.map((c) => c.role)).toEqual(["perception", "decision", "perception", "judge"]);
    expect(calls.at(-1)!.value).toEqual({ correct: false, reason: "the judge disagrees" });
    expect(r.state.invocations[0]!.judge_tokens).toBeGreaterThan(0);
  });

  it("stops on a model that cannot be used, leaving the queries for --resume instead of failing them", async () => {
    const { deps, opts } = await setup(() => ({ status: 401, message: "API key not valid" }), 4);
    const r = await runBatch(opts(), deps);
    expect(r.status).toBe("stopped");
    expect(r.error?.code).toBe("MODEL_NO_KEY");
    expect(r.outcomes).toHaveLength(0);
    expect(store!.batchItems(r.state.run_id).every((i) => i.status === "pending")).toBe(true);
    expect(csvRows(r.files.queries)).toHaveLength(0);
    expect(readFileSync(r.files.summary, "utf8")).toMatch(/4 not run yet/);
  });
});
