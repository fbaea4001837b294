/**
 * `pda ui` in a real browser: Debian's Chromium (playwright-core, headless) against a real `pda ui` child on a
 * store filled by real `pda run` children (scripted model, the real math server), and a live run through the
 * real @google/genai client against the fake Gemini server, held mid-session so the page must update by itself.
 */
import { request } from "node:http";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeGemini, type FakeGemini, type FakeGeminiRequest } from "../../testing/index.js";
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

const PLAN_1 = ["Step 0: divide to get the value", "Step 1: answer"];
const PLAN_2 = ["Step 0: compute 32 + 5 - 3 * 2 with multiply, add and subtract", "Step 1: answer"];
const MATH = [
  "const product = await multiply({a: 3, b: 2});",
  "const sum = await add(32, 5);",
  "return await subtract({a: sum, b: product});",
].join("\n");
const HOSTILE = `<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">`;

let f: Folder;
let ui: UiChild;
let browser: Browser;
/** The model the sessions answered from the page go on with (the UI's resume inherits its environment). */
let resumeModel: FakeGemini;
const resumeSeen: FakeGeminiRequest[] = [];
const ids: Record<string, string> = {};
const shots = process.env.PDA_UI_SCREENSHOTS;

async function run(name: string, query: string, script: unknown, extra: string[] = []) {
  const r = await f.pda([
    "run",
    query,
    "--model",
    `scripted:${f.file(`${name}.yaml`, script)}`,
    "--json",
    ...extra,
  ]);
  const summary = JSON.parse(r.stdout) as { session_id: string; status: string };
  ids[name] = summary.session_id;
  return summary;
}

async function page(width = 1280, height = 800): Promise<Page> {
  const p = await browser.newPage({ viewport: { width, height } });
  p.on("pageerror", (e) => {
    throw e;
  });
  return p;
}

async function shot(p: Page, name: string) {
  if (shots) await p.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

/** A raw request with headers fetch() will not let us set (Host). */
function rawGet(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

describe.skipIf(!hasChromium)("pda ui in Chromium", () => {
  beforeAll(async () => {
    f = folder("pda-ui-");
    const [math, hostile, waiting] = await Promise.all([
      run("math", "What is 32 + 5 - 3 * 2", {
        perception: [snap(), snap({ local_reasoning: "division by zero" }), achieved("31")],
        decision: [code(PLAN_1, 0, "return await divide(31, 0)"), code(PLAN_2, 0, MATH)],
      }),
      run("hostile", "Show the <b>markup</b> page", {
        perception: [snap(), achieved(`the page says ${HOSTILE}`)],
        decision: [code(["Step 0: fetch the page"], 0, `return ${JSON.stringify(HOSTILE)}`, "fetch it")],
      }),
      run(
        "waiting",
        "Summarise the report",
        {
          perception: [snap()],
          decision: [
            {
              plan_text: ["Step 0: ask which report"],
              step_index: 0,
              description: "ask",
              type: "NOP",
              question: "Which report, the Q3 or the Q4 one?",
            },
          ],
        },
        ["--hil", "policy:defer"],
      ),
    ]);
    expect(math.status).toBe("succeeded");
    expect(hostile.status).toBe("succeeded");
    expect(waiting.status).toBe("awaiting_human");
    // The session goes on from the answer: a decision that concludes, and a perception that agrees.
    resumeModel = await startFakeGemini({
      handler: (req) => {
        resumeSeen.push(req);
        return req.role === "decision"
          ? {
              json: {
                plan_text: ["Step 0: ask which report", "Step 1: summarise it"],
                step_index: 1,
                description: "answer",
                type: "CONCLUDE",
                conclusion: "The Q4 report: sales rose 12%",
              },
              usage: { input: 90, output: 20 },
            }
          : { json: achieved("The Q4 report: sales rose 12%"), usage: { input: 90, output: 20 } };
      },
    });
    ui = await startUiChild(f, [], {
      GEMINI_API_KEY: "test-key-not-secret-123",
      GEMINI_BASE_URL: resumeModel.url,
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await ui?.stop();
    await resumeModel?.close();
    f?.close();
  });

  it("lists the sessions, searches them with the store's full-text index, and filters by status", async () => {
    const p = await page();
    await p.goto(ui.url);
    await p.waitForSelector("table.sessions tbody tr");
    const rows = p.locator("table.sessions tbody tr");
    await until("three rows", async () => ((await rows.count()) === 3 ? true : undefined));
    const text = await p.locator("table.sessions").innerText();
    expect(text).toContain("What is 32 + 5 - 3 * 2");
    expect(text).toContain("→ 31");
    expect(text).toContain("awaiting human");
    await shot(p, "list-1280");

    await p.fill("input[name=q]", "markup");
    await p.click("form.filters button[type=submit]");
    await until("one search hit", async () => ((await rows.count()) === 1 ? true : undefined));
    expect(await rows.first().innerText()).toContain("Show the <b>markup</b> page");

    await p.goto(`${ui.url}#/waiting`);
    await until("the waiting session alone", async () =>
      (await rows.count()) === 1 && (await rows.first().innerText()).includes("Summarise the report")
        ? true
        : undefined,
    );
    await p.setViewportSize({ width: 400, height: 800 });
    await p.goto(ui.url);
    await until("three rows", async () => ((await rows.count()) === 3 ? true : undefined));
    await shot(p, "list-400");
    await p.close();
  });

  it("pages with a keyset cursor: each page starts after the last, no session twice, and ends", async () => {
    const seen: string[] = [];
    let after = "";
    for (let i = 0; i < 5; i++) {
      const r = await fetch(`${ui.url}api/sessions?limit=1${after ? `&after=${after}` : ""}`);
      const body = (await r.json()) as { items: { session_id: string }[]; next: string | null };
      seen.push(...body.items.map((s) => s.session_id));
      if (!body.next) break;
      after = body.next;
    }
    expect(new Set(seen)).toEqual(new Set(Object.values(ids)));
    expect(seen).toHaveLength(3);
    const bad = await fetch(`${ui.url}api/sessions?after=nonsense`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/cursor/);
  });

  it("shows a session's timeline: plan versions with their diff and trigger, highlighted code, tool calls, prompts on demand", async () => {
    const p = await page();
    await p.goto(`${ui.url}#/s/${ids.math}`);
    await p.waitForSelector(".card.plan");
    expect(await p.locator("h1").innerText()).toBe("What is 32 + 5 - 3 * 2");
    expect(await p.locator("#final-answer").innerText()).toBe("31");
    expect(await p.locator(".totals").innerText()).toMatch(/Tool calls\s+4\b/i);

    const plans = p.locator(".card.plan");
    expect(await plans.count()).toBe(2);
    const second = plans.nth(1);
    expect(await second.locator("header").innerText()).toMatch(
      /version 2[\s\S]*replan after failure[\s\S]*triggered by/,
    );
    expect(await second.locator(".diff .del").first().innerText()).toBe("- Step 0: divide to get the value");
    expect(await second.locator(".diff .add").first().innerText()).toBe(`+ ${PLAN_2[0]}`);
    expect(await second.locator(".diff .same").innerText()).toBe("  Step 1: answer");
    // The trigger links to the card that caused the version.
    const trigger = second.locator("header a.jump");
    const target = await trigger.getAttribute("data-target");
    expect(await p.locator(`#${target}`).count()).toBe(1);

    const failed = p.locator("#step-0");
    expect(await failed.locator(".err").innerText()).toMatch(/zero/i);
    const good = p.locator("#step-1");
    expect(await good.locator("pre.code .hljs-keyword").first().innerText()).toMatch(/const|await|return/);
    expect(await good.locator("pre.code").innerText()).toBe(MATH);
    expect(await good.locator(".result pre").innerText()).toBe("31");
    const tools = await good.locator("table.tools tbody tr:not(.call-detail)").allInnerTexts();
    expect(tools.map((t) => t.split("\t").slice(0, 3).join(" "))).toEqual([
      "math multiply ok",
      "math add ok",
      "math subtract ok",
    ]);
    // A call's arguments and result unfold under its row.
    const detail = good.locator("table.tools tr.call-detail").first();
    expect(await detail.isVisible()).toBe(false);
    await good.locator("table.tools button.call-toggle").first().click();
    await detail.waitFor({ state: "visible" });
    expect((await detail.innerText()).replace(/\s+/g, " ")).toMatch(/"a": 3, "b": 2 }.*Result 6/i);

    const firstModel = p.locator(".card.llm").first();
    expect(await firstModel.locator("header").innerText()).toMatch(/perception/);
    await firstModel.locator("button").click();
    await p.waitForSelector(".llm-detail pre");
    expect(await firstModel.locator(".llm-detail pre").first().innerText()).toContain(
      "What is 32 + 5 - 3 * 2",
    );
    // A call without an error shows nothing after its response (not the text "null").
    expect(await firstModel.locator(".llm-detail").innerText()).not.toMatch(/null\s*$/);
    await shot(p, "session-1280");
    await p.setViewportSize({ width: 400, height: 800 });
    await shot(p, "session-400");
    await p.close();
  });

  it("shows what a session holds as text: a result with <script> runs nothing", async () => {
    const p = await page();
    await p.goto(`${ui.url}#/s/${ids.hostile}`);
    await p.waitForSelector("#step-0 .result pre");
    expect(await p.locator("#step-0 .result pre").innerText()).toBe(HOSTILE);
    expect(await p.locator("#final-answer").innerText()).toBe(`the page says ${HOSTILE}`);
    expect(await p.locator("h1").innerText()).toBe("Show the <b>markup</b> page");
    expect(await p.locator("main img, main script, main b").count()).toBe(0);
    expect(await p.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss)).toBeUndefined();
    await p.close();
  });

  it("refuses a foreign Host or Origin (DNS rebinding) and sends no CORS header", async () => {
    const port = new URL(ui.url).port;
    expect(await rawGet(`${ui.url}api/sessions`, { host: `evil.example:${port}` })).toBe(403);
    expect(await rawGet(`${ui.url}api/sessions`, { origin: "http://evil.example" })).toBe(403);
    expect(await rawGet(`${ui.url}api/sessions`, { host: `localhost:${port}` })).toBe(200);
    const r = await fetch(`${ui.url}api/sessions`);
    expect(r.headers.get("access-control-allow-origin")).toBeNull();
    expect(r.headers.get("content-security-policy")).toMatch(/script-src 'self'/);
    // Read-only but for answers: a replay needs pda ui --replay.
    const replay = await fetch(`${ui.url}api/sessions/${ids.math}/replay`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: "{}",
    });
    expect(replay.status).toBe(403);
    expect(((await replay.json()) as { error: string }).error).toMatch(/pda ui --replay/);
  });

  it("updates a running session's page as `pda run` writes it, without a reload", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let perceptions = 0;
    const gemini = await startFakeGemini({
      handler: async (req) => {
        if (req.role === "perception") {
          perceptions++;
          if (perceptions === 1) return { json: snap(), usage: { input: 100, output: 30 } };
          await gate; // hold the session after its step, until the page has shown it running
          return { json: achieved("31"), usage: { input: 100, output: 30 } };
        }
        return { json: code(PLAN_2, 0, MATH), usage: { input: 200, output: 60 } };
      },
    });
    const p = await page();
    try {
      await p.goto(ui.url);
      await p.waitForSelector("table.sessions tbody tr");
      const running = f.pda(["run", "Live: what is 32 + 5 - 3 * 2", "--json"], {
        GEMINI_API_KEY: "test-key-not-secret-123",
        GEMINI_BASE_URL: gemini.url,
      });
      // The list shows the new session as the run starts it (the list page listens too).
      const link = p.locator("table.sessions a", { hasText: "Live: what is" });
      await link.waitFor({ timeout: 60_000 });
      await link.click();
      await p.waitForSelector("h1:has-text('Live: what is')");
      await p.evaluate(() => ((globalThis as unknown as { __marker: number }).__marker = 42));
      // The step's tool calls appear while the session waits on perception.
      await p.waitForSelector("#step-0 table.tools tbody tr:nth-child(3)", { timeout: 60_000 });
      expect(await p.locator(".session-head .badge").first().innerText()).toBe("running");
      expect(await p.locator("#live").isVisible()).toBe(true);
      await shot(p, "live-running");
      release();
      await p.waitForSelector("#final-answer", { timeout: 60_000 });
      expect(await p.locator("#final-answer").innerText()).toBe("31");
      expect(await p.locator(".session-head .badge").first().innerText()).toBe("succeeded");
      expect(await p.evaluate(() => (globalThis as unknown as { __marker?: number }).__marker)).toBe(42);
      const r = await running;
      expect(JSON.parse(r.stdout)).toMatchObject({ status: "succeeded", final_answer: "31" });
    } finally {
      release();
      await p.close();
      await gemini.close();
    }
  });

  it("answers a waiting session's question in the page: the session goes on with the answer and succeeds", async () => {
    const p = await page();
    await p.goto(`${ui.url}#/s/${ids.waiting}`);
    await p.waitForSelector(".answer-form textarea[name=answer]");
    expect(await p.locator(".question p").first().innerText()).toBe("Which report, the Q3 or the Q4 one?");
    await shot(p, "answer-form");
    // A foreign page cannot post an answer: its Origin is refused, and a form post is not JSON.
    const foreign = await fetch(`${ui.url}api/sessions/${ids.waiting}/answer`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Origin: "http://evil.example" },
      body: JSON.stringify({ kind: "clarification", entry: { choice: "answer", text: "x" } }),
    });
    expect(foreign.status).toBe(403);
    const form = await fetch(`${ui.url}api/sessions/${ids.waiting}/answer`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "kind=clarification",
    });
    expect(form.status).toBe(415);
    const wrongKind = await fetch(`${ui.url}api/sessions/${ids.waiting}/answer`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ kind: "approval", entry: { choice: "deny" } }),
    });
    expect(wrongKind.status).toBe(400);
    expect(((await wrongKind.json()) as { error: string }).error).toMatch(/waits on a clarification/);

    await p.fill(".answer-form textarea[name=answer]", "the Q4 one");
    await p.click(".answer-form button:has-text('Answer')");
    const badge = p.locator(".session-head .badge").first();
    await until("the session to end", async () =>
      ["succeeded", "failed", "aborted"].includes(await badge.innerText()) ? true : undefined,
    );
    expect(await p.locator(".session-head").innerText()).toContain("The Q4 report: sales rose 12%");
    expect(await p.locator("#final-answer").innerText()).toBe("The Q4 report: sales rose 12%");
    expect(await p.locator(".session-head .badge").first().innerText()).toBe("succeeded");
    // The answer reached the model, and the log says a person gave it through the UI.
    expect(resumeSeen.some((r) => r.userText.includes("the Q4 one"))).toBe(true);
    const human = p.locator(".card.human-card", { hasText: "answered by ui" });
    await human.waitFor();
    expect(await human.locator(".answer-text").innerText()).toBe("the Q4 one");
    await shot(p, "answered");
    await p.close();
  });
});
