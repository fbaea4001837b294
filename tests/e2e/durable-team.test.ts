/**
 * Durable steps across an agent team, the way a crash happens: `pda run` (a real child process, a real store)
 * runs a boss whose step hands a cashier sub-agent three charges against the tests' ledger server (which writes
 * down every call it receives), and is killed with SIGKILL while the cashier is charging. `pda resume` of the
 * boss runs its step again: the call to the cashier finds the cashier's session the dead process left running
 * and resumes it (its own step replays its charges) instead of starting a new cashier. For each kill point:
 * every charge happened exactly once, there is one cashier session, and the boss's step returns what an
 * uninterrupted run returns.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { stringify } from "yaml";
import { afterAll, beforeAll, expect, it } from "vitest";
import { achieved, code, snap } from "../../agent/tests/harness.js";
import { subCode } from "../../agent/tests/team.js";
import { ledgerLines, pdaChild, running, shopCase, type ShopCase } from "./pda-child.js";

const BOSS = `const r = await agents.cashier({ task: "charge the three items" });
return r.result;`;
const CASHIER = `const receipts = [];
for (let i = 0; i < 3; i++) receipts.push((await charge({ id: i, amount: i + 1 })).receipt);
await agent.report({ success: true, error_code: "NONE", reason: "charged all three", result: receipts });`;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-e2e-durable-team-"));
});
afterAll(() => {
  for (const c of running) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

type Case = ShopCase;

function setUp(name: string): Case {
  // Long enough that a kill after a charge is written down lands while it is in flight.
  const c = shopCase(dir, name, 150);
  const { file } = c;
  // No time limit ends a step the machine is slow to run; the kill does.
  file("profiles.yaml", {
    default: "t",
    profiles: { t: { agent: "boss", sandbox: { timeout_ms: 3_600_000 } } },
  });
  file("agents.yaml", {
    agents: {
      boss: { description: "Runs the shop.", subagents: ["cashier"] },
      cashier: { description: "Charges items.", tools: ["shop.charge"] },
    },
  });
  file("model.yaml", {
    perception: [snap(), achieved("charged")],
    decision: [code(["Step 0: have the cashier charge"], 0, BOSS)],
    "cashier.perception": [snap()],
    "cashier.decision": [subCode(CASHIER)],
  });
  file("resume.yaml", { perception: [achieved("charged")] });
  return c;
}

const pda = (c: Case, args: string[]) => pdaChild(c.folder, c.db, args);

const charges = (c: Case) => ledgerLines(c.ledger).map((l) => l.id);

function sessions(c: Case) {
  const db = new Database(c.db, { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare(
        `SELECT s.agent, s.status, s.parent_session_id AS parent, s.id,
          (SELECT record_json FROM steps WHERE session_id = s.id AND idx = 0) AS step
         FROM sessions s ORDER BY s.seq`,
      )
      .all() as { agent: string | null; status: string; parent: string | null; id: string; step: string }[];
  } finally {
    db.close();
  }
}

const stepValue = (step: string) =>
  (JSON.parse(step) as { execution_result?: { value?: unknown } }).execution_result?.value;

it("SIGKILL while a sub-agent charges: the resumed boss resumes that sub-agent, and every charge happens once", async () => {
  const whole = setUp("whole");
  const r = await pda(whole, [
    "run",
    "charge three items",
    "--quiet",
    "--model",
    `scripted:${join(whole.folder, "model.yaml")}`,
  ]).done;
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  const expected = stepValue(sessions(whole)[0]!.step);
  expect(expected).toEqual(["r-0", "r-1", "r-2"]);

  // Kill while charge k is in flight (written down by the server, not yet answered), for each k.
  for (const k of [0, 1, 2]) {
    const c = setUp(`kill-${k}`);
    const run = pda(c, ["run", "charge three items", "--model", `scripted:${join(c.folder, "model.yaml")}`]);
    const deadline = Date.now() + 120_000;
    while (!charges(c).includes(k)) {
      if (run.child.exitCode !== null) throw new Error(`kill point ${k}: pda run ended before charge ${k}`);
      if (Date.now() > deadline) throw new Error(`kill point ${k}: charge ${k} never came`);
      await new Promise((r) => setTimeout(r, 2));
    }
    run.child.kill("SIGKILL");
    await run.done;
    const [boss, cashier] = sessions(c);
    expect(boss, `kill point ${k}`).toMatchObject({ agent: "boss", status: "running" });
    expect(cashier, `kill point ${k}`).toMatchObject({
      agent: "cashier",
      status: "running",
      parent: boss!.id,
    });

    // The charge in flight happened (the ledger has it): the person gives its result.
    writeFileSync(
      join(c.folder, "answers.yaml"),
      stringify({
        in_doubt: [
          { choice: "give_result", value: { receipt: `r-${k}`, amount: k + 1 }, expect: `"id":${k}` },
        ],
      }),
    );
    const resumed = await pda(c, [
      "resume",
      boss!.id,
      "--quiet",
      "--model",
      `scripted:${join(c.folder, "resume.yaml")}`,
      "--hil",
      `scripted:${join(c.folder, "answers.yaml")}`,
    ]).done;
    expect(resumed.stderr, `kill point ${k}`).toBe("");
    expect(resumed.code, `kill point ${k}`).toBe(0);
    const after = sessions(c);
    // No second cashier: the one the dead process left was resumed, and finished.
    expect(
      after.map((s) => [s.agent, s.status]),
      `kill point ${k}`,
    ).toEqual([
      ["boss", "succeeded"],
      ["cashier", "succeeded"],
    ]);
    expect(charges(c).sort(), `kill point ${k}`).toEqual([0, 1, 2]);
    expect(stepValue(after[0]!.step), `kill point ${k}`).toEqual(expected);
  }
}, 300_000);
