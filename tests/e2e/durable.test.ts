/**
 * Durable CODE steps, the way a crash happens: `pda run` (a real child process, a real store) is killed with
 * SIGKILL at many points of a step that makes twelve calls to a server with side effects (tests' ledger server,
 * which writes down every call it receives), then `pda resume` finishes it. For every kill point: each charge
 * (not idempotent) happened exactly once, each lookup (read-only) at least once, and the step returned what an
 * uninterrupted run returns. A charge left in doubt is answered the way a person would: by looking at the
 * ledger (it happened: give its result; it did not: make it again).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { stringify } from "yaml";
import { afterAll, beforeAll, expect, it } from "vitest";
import { intentDir, readJournalFile } from "../../memory/index.js";
import { achieved, code, snap } from "../../agent/tests/harness.js";
import { ledgerLines as ledgerLines_, pdaChild, running, shopCase, type ShopCase } from "./pda-child.js";

const ITEMS = 6;
/**
 * Each item: a lookup, then a charge whose amount comes from it, a nonce from the seeded Math.random and the
 * time it was made (the lookups take their time, so a replay reads the logged times or asks for another charge).
 */
const STEP = `
let total = 0;
const receipts = [];
for (let i = 0; i < ${ITEMS}; i++) {
  const v = await lookup({ id: i });
  const r = await charge({ id: i, amount: v.value, nonce: Math.floor(Math.random() * 1e9), at: Date.now() });
  total += r.amount;
  receipts.push(r.receipt);
}
return { total, receipts, started: new Date().getTime() > 0 };`;
const KILL_POINTS = Number(process.env.KILLS ?? 50);
const PARALLEL = 3;

let dir: string;
/** `pda show` is checked once, on the first resumed kill point that replayed calls. */
let shown = false;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-e2e-durable-"));
  // No time limit ends a step the machine is slow to run; the kill does.
  writeFileSync(
    join(dir, "profiles.yaml"),
    stringify({ default: "t", profiles: { t: { sandbox: { timeout_ms: 3_600_000 } } } }),
  );
});
afterAll(() => {
  for (const c of running) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

type Case = ShopCase;

function setUp(name: string): Case {
  const c = shopCase(dir, name, 15);
  writeFileSync(join(c.folder, "profiles.yaml"), readFileSync(join(dir, "profiles.yaml")));
  c.file("model.yaml", {
    perception: [snap(), achieved("charged")],
    decision: [code(["Step 0: charge"], 0, STEP)],
  });
  c.file("resume.yaml", { perception: [achieved("charged")] });
  return c;
}

const pda = (c: Case, args: string[]) => pdaChild(c.folder, c.db, args);

const ledgerLines = (c: Case) => ledgerLines_(c.ledger);

function query<T>(c: Case, sql: string, ...params: unknown[]): T[] {
  const db = new Database(c.db, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

const stepValue = (c: Case) =>
  query<{ record_json: string }>(c, "SELECT record_json FROM steps WHERE idx = 0").map(
    (r) => (JSON.parse(r.record_json) as { execution_result?: { value?: unknown } }).execution_result?.value,
  )[0];

async function runUninterrupted(): Promise<unknown> {
  const c = setUp("whole");
  // --quiet: the trace goes to stderr, which must then hold nothing (no warning, no error).
  const r = await pda(c, [
    "run",
    "charge all",
    "--quiet",
    "--model",
    `scripted:${join(c.folder, "model.yaml")}`,
  ]).done;
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return stepValue(c);
}

/** Kill point p: after the ledger has `k` calls written down, then `wait` ms more. */
async function killAndResume(p: number, expected: unknown): Promise<string> {
  const c = setUp(`kill-${p}`);
  const k = 1 + (p % (ITEMS * 2));
  const wait = Math.floor(p / (ITEMS * 2)) * 6;
  const run = pda(c, [
    "run",
    "charge all",
    "--model",
    `scripted:${join(c.folder, "model.yaml")}`,
    "--hil",
    "policy:fail",
  ]);
  const deadline = Date.now() + 120_000;
  while (ledgerLines(c).length < k && run.child.exitCode === null) {
    if (Date.now() > deadline) throw new Error(`kill point ${p}: the ledger never reached ${k} calls`);
    await new Promise((r) => setTimeout(r, 2));
  }
  await new Promise((r) => setTimeout(r, wait));
  run.child.kill("SIGKILL");
  await run.done;

  const status = query<{ status: string }>(c, "SELECT status FROM sessions")[0]!.status;
  let where = "finished before the kill";
  if (status === "running") {
    // A charge the dead process sent with no outcome logged: did the shop get it? The ledger says.
    // Its intent is in the session's journal file (or in tool_intents, where a step's end folds one).
    const id = query<{ id: string }>(c, "SELECT id FROM sessions")[0]!.id;
    // Finished: a row, or a finished row's line in the journal file (its window had not committed).
    const journal = readJournalFile(intentDir(c.db), id);
    const finished = new Set(
      [
        ...query<{ step_index: number; seq: number }>(
          c,
          "SELECT step_index, seq FROM tool_calls WHERE seq IS NOT NULL AND state != 'replayed'",
        ),
        ...journal.results,
      ].map((r) => `${r.step_index}:${r.seq}`),
    );
    const sent = [
      ...query<{ tool: string; args_json: string }>(
        c,
        `SELECT i.tool, i.args_json FROM tool_intents i WHERE i.tool = 'charge' AND NOT EXISTS (SELECT 1 FROM
          tool_calls c WHERE c.session_id = i.session_id AND c.step_index = i.step_index AND c.seq = i.seq
          AND c.state != 'replayed')`,
      ),
      ...journal.intents.filter((i) => i.tool === "charge" && !finished.has(`${i.step_index}:${i.seq}`)),
    ];
    const answers = sent.map((s) => {
      const args = JSON.parse(s.args_json) as { id: number; amount: number };
      const happened = ledgerLines(c).some((l) => l.tool === "charge" && l.id === args.id);
      return happened
        ? { choice: "give_result", value: { receipt: `r-${args.id}`, amount: args.amount } }
        : "repeat";
    });
    writeFileSync(join(c.folder, "answers.yaml"), stringify({ in_doubt: answers }));
    where = `resumed with ${sent.length} charge(s) in doubt`;
    const r = await pda(c, [
      "resume",
      id,
      "--quiet",
      "--model",
      `scripted:${join(c.folder, "resume.yaml")}`,
      "--hil",
      `scripted:${join(c.folder, "answers.yaml")}`,
    ]).done;
    expect(r.stderr, `kill point ${p}`).toBe("");
    expect(r.code, `kill point ${p}`).toBe(0);
    const replayed = query(c, "SELECT 1 FROM tool_calls_all WHERE state = 'replayed'").length;
    if (!shown && replayed > 0) {
      // What a person reading the session sees: which calls were replayed, which were in doubt, who decided.
      shown = true;
      const show = await pda(c, ["show", id]).done;
      expect(show.stdout).toMatch(/shop\.lookup ok replayed/);
      if (sent.length > 0) expect(show.stdout).toMatch(/shop\.charge \S+ in doubt/);
    }
  }
  expect(query(c, "SELECT status FROM sessions"), `kill point ${p}`).toEqual([{ status: "succeeded" }]);
  const lines = ledgerLines(c);
  for (let i = 0; i < ITEMS; i++) {
    expect(
      lines.filter((l) => l.tool === "charge" && l.id === i).length,
      `kill point ${p}: charge ${i}`,
    ).toBe(1);
    expect(
      lines.filter((l) => l.tool === "lookup" && l.id === i).length,
      `kill point ${p}: lookup ${i}`,
    ).toBeGreaterThanOrEqual(1);
  }
  expect(stepValue(c), `kill point ${p}`).toEqual(expected);
  rmSync(c.folder, { recursive: true, force: true });
  return where;
}

it(`SIGKILL at ${KILL_POINTS} points of a twelve-call step: every charge once, every lookup at least once, the same result`, async () => {
  const expected = await runUninterrupted();
  expect(expected).toMatchObject({ total: 105, receipts: ["r-0", "r-1", "r-2", "r-3", "r-4", "r-5"] });
  const outcomes: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < KILL_POINTS) outcomes.push(await killAndResume(next++, expected));
    }),
  );
  expect(outcomes).toHaveLength(KILL_POINTS);
  // The kills landed mid-step, not only before or after it.
  expect(outcomes.filter((o) => o.startsWith("resumed")).length).toBeGreaterThan(KILL_POINTS / 2);
  // And some of those resumes replayed calls, so `pda show` was checked on one.
  expect(shown, "no resume replayed a call, so `pda show` was never checked").toBe(true);
}, 900_000);
