/**
 * A call in doubt answered in `pda ui`, in Debian's Chromium: a real `pda run` child charges through the
 * tests' ledger server (a real stdio MCP server that writes down every call it receives), whose result holds
 * a receipt the profile redacts, then pauses on an approval (policy:defer). Answered from the page, the resume
 * replays the step and meets the charge, whose result the store did not keep: the session waits again, on an
 * `in_doubt` question, which the page answers with the result it had. The charge is never made twice.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { chromium, type Browser, type Page } from "playwright-core";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { distPath } from "../../core/index.js";
import { startFakeGemini, type FakeGemini } from "../../testing/index.js";
import {
  CHROMIUM,
  achieved,
  code,
  folder,
  hasChromium,
  snap,
  startUiChild,
  until,
  type Folder,
  type UiChild,
} from "./harness.js";

const STEP = `const r = await charge({ id: 1, amount: 7 });
await set({ key: "paid", value: r.amount });
return r.receipt;`;

let f: Folder;
let ui: UiChild;
let browser: Browser;
let model: FakeGemini;
let ledger: string;
let id: string;
/** A boss whose cashier sub-agent paused on an approval (so the boss waits on it too). */
let teamId: string;
const BOSS = `const r = await agents.cashier({ task: "charge item 2 and note it" });
return r.result;`;
const CASHIER = `const c = await charge({ id: 2, amount: 9 });
await set({ key: "noted", value: c.amount });
await agent.report({ success: true, error_code: "NONE", reason: "charged and noted", result: c.amount });`;

const ledgerLines = () =>
  existsSync(ledger)
    ? readFileSync(ledger, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { tool: string; id?: number; key?: string })
    : [];

/** The calls of the first session (item 1, key "paid"): the team's session shares the ledger. */
const firstSession = () => ledgerLines().filter((l) => l.id === 1 || l.key === "paid");

async function post(entry: unknown, kind = "in_doubt") {
  const r = await fetch(`${ui.url}api/sessions/${id}/answer`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ kind, entry }),
  });
  return { status: r.status, body: (await r.json()) as { error?: string } };
}

/** Waits for the page's answer form to offer `button`, the session waiting again once a resume has ended. */
async function formWith(p: Page, button: string) {
  await p.locator(`.answer-form button:has-text('${button}')`).waitFor({ timeout: 60_000 });
}

describe.skipIf(!hasChromium)("pda ui answers what a durable step asks", () => {
  beforeAll(async () => {
    f = folder("pda-ui-doubt-");
    ledger = join(f.dir, "ledger.jsonl");
    writeFileSync(
      join(f.config, "mcp_server_config.yaml"),
      stringify({
        servers: [
          {
            id: "shop",
            command: process.execPath,
            args: [distPath("mcp_servers/testing/ledger_server.js")],
            env: { LEDGER_FILE: ledger, LEDGER_DELAY_MS: "0" },
            needs_approval: ["set"],
          },
        ],
      }),
    );
    // The receipt is a secret to this store: the charge's result is kept redacted. The team profile runs a
    // boss whose cashier sub-agent charges and notes.
    writeFileSync(
      join(f.config, "profiles.yaml"),
      stringify({ default: "t", profiles: { t: { redact: ["r-[0-9]+"] }, team: { agent: "boss" } } }),
    );
    writeFileSync(
      join(f.config, "agents.yaml"),
      stringify({
        agents: {
          boss: { description: "Runs the shop.", subagents: ["cashier"] },
          cashier: { description: "Charges and notes.", tools: ["shop.charge", "shop.set"] },
        },
      }),
    );
    const r = await f.pda([
      "run",
      "charge item 1 and note it",
      "--model",
      `scripted:${f.file("run.yaml", { perception: [snap()], decision: [code(["Step 0: charge"], 0, STEP)] })}`,
      "--hil",
      "policy:defer",
      "--json",
    ]);
    const summary = JSON.parse(r.stdout) as { session_id: string; status: string; question: string };
    expect(summary).toMatchObject({
      status: "awaiting_human",
      question: 'allow shop.set({"key":"paid","value":7})?',
    });
    id = summary.session_id;
    const team = await f.pda([
      "run",
      "charge item 2 and have it noted",
      "--profile",
      "team",
      "--model",
      `scripted:${f.file("team.yaml", {
        perception: [snap()],
        decision: [code(["Step 0: have it charged"], 0, BOSS)],
        "cashier.perception": [snap()],
        "cashier.decision": [code(["Step 0: charge and note"], 0, CASHIER)],
      })}`,
      "--hil",
      "policy:defer",
      "--json",
    ]);
    teamId = (JSON.parse(team.stdout) as { session_id: string }).session_id;
    // The resumes the page starts go on with this model once the step is done.
    model = await startFakeGemini({
      handler: (req) =>
        req.role === "decision"
          ? {
              json: {
                plan_text: ["Step 0: charge"],
                step_index: 1,
                description: "end",
                type: "CONCLUDE",
                conclusion: "charged",
              },
              usage: { input: 90, output: 20 },
            }
          : { json: achieved("charged, receipt paid"), usage: { input: 90, output: 20 } },
    });
    ui = await startUiChild(f, [], { GEMINI_API_KEY: "test-key-not-secret-123", GEMINI_BASE_URL: model.url });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await ui?.stop();
    await model?.close();
    f?.close();
  });

  it("asks it in the page, takes the result it had, and the session ends with the charge made once", async () => {
    const p = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    p.on("pageerror", (e) => {
      throw e;
    });
    await p.goto(`${ui.url}#/s/${id}`);
    await formWith(p, "Allow once");
    await p.click(".answer-form button:has-text('Allow once')");

    // The resume replays the charge, whose result was not kept: the session waits on the page again.
    await formWith(p, "Make it again");
    const question = p.locator(".question");
    expect(await question.locator("p").first().innerText()).toBe(
      'shop.charge({"id":1,"amount":7}) happened before the process ended, but its result was not kept: repeat it, give its result, or skip it?',
    );
    expect(await question.innerText()).toContain(
      "its result was not kept (too large, or a secret the store redacted)",
    );
    expect(await question.locator(".answer-form pre").innerText()).toContain('"amount": 7');
    // What the page used to offer for it, and what is not an answer to it at all, are refused by name.
    expect(await post({ choice: "continue" })).toMatchObject({ status: 400 });
    expect((await post({ choice: "give_result" })).body.error).toMatch(/give_result needs a value/);
    expect(firstSession().map((l) => l.tool)).toEqual(["charge"]);

    await p.fill(".answer-form textarea[name=value]", '{"receipt": "paid", "amount": 7}');
    await p.click(".answer-form button:has-text('Use this result')");

    // Past the charge, the approval is asked again (the first answer went to a resume that stopped before it).
    await formWith(p, "Always allow");
    expect(await question.locator("p").first().innerText()).toBe('allow shop.set({"key":"paid","value":7})?');
    await p.click(".answer-form button:has-text('Always allow')");

    const badge = p.locator(".session-head .badge").first();
    await until("the session to end", async () =>
      ["succeeded", "failed", "aborted"].includes(await badge.innerText()) ? true : undefined,
    );
    expect(await badge.innerText()).toBe("succeeded");
    // Charged once, noted once; the step went on with the result the person gave.
    expect(firstSession().map((l) => l.tool)).toEqual(["charge", "set"]);
    const db = new Database(f.db, { readonly: true });
    try {
      const step = db.prepare("SELECT record_json FROM steps WHERE idx = 0").get() as { record_json: string };
      expect(JSON.parse(step.record_json)).toMatchObject({ execution_result: { ok: true, value: "paid" } });
      const decided = db
        .prepare("SELECT state, decided_by FROM tool_calls WHERE decided_by IS NOT NULL")
        .all();
      expect(decided).toEqual([{ state: "done", decided_by: "ui:give_result" }]);
    } finally {
      db.close();
    }
    // The page's timeline says who decided the charge's outcome.
    await expect
      .poll(() => p.locator(".call-state").allInnerTexts(), { timeout: 30_000 })
      .toContain(" · decided by ui:give_result");
    // `pda show` says what became of the charge: its first run, then the result the person gave.
    const show = await f.pda(["show", id]);
    expect(show.stdout).toMatch(/→ shop\.charge ok \d+ ms/);
    expect(show.stdout).toMatch(/→ shop\.charge ok result given \(decided by ui:give_result\)/);
    const human = p.locator(".card.human-card", { hasText: "give_result" });
    await human.waitFor();
    expect(await human.innerText()).toContain("answered by ui");
    await p.close();
  });

  it("a team waiting on its sub-agent's approval: answered in the page, the sub-agent goes on, under the run's profile", async () => {
    const p = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    p.on("pageerror", (e) => {
      throw e;
    });
    const before = ledgerLines().length;
    await p.goto(`${ui.url}#/s/${teamId}`);
    await formWith(p, "Allow once");
    // The boss's page asks the cashier's question.
    expect(await p.locator(".question p").first().innerText()).toBe(
      'allow shop.set({"key":"noted","value":9})?',
    );
    await p.click(".answer-form button:has-text('Allow once')");
    const badge = p.locator(".session-head .badge").first();
    await until("the session to end", async () =>
      ["succeeded", "failed", "aborted"].includes(await badge.innerText()) ? true : undefined,
    );
    expect(await badge.innerText()).toBe("succeeded");
    // The resume ran under the team profile the session ran under (pda ui passed none): the replayed step
    // found its agents, the cashier went on from its pause, and its charge was not made again.
    expect(
      ledgerLines()
        .slice(before)
        .map((l) => l.tool),
    ).toEqual(["set"]);
    const db = new Database(f.db, { readonly: true });
    try {
      const rows = db
        .prepare(
          "SELECT agent, status, json_extract(session_json, '$.profile') AS profile FROM sessions WHERE id = ? OR parent_session_id = ? ORDER BY seq",
        )
        .all(teamId, teamId);
      expect(rows).toEqual([
        { agent: "boss", status: "succeeded", profile: "team" },
        { agent: "cashier", status: "succeeded", profile: "team" },
      ]);
    } finally {
      db.close();
    }
    await p.close();
  });
});
