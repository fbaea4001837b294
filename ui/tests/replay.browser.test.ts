/**
 * Replaying a session from its page (`pda ui --replay`), in Chromium: a real `pda run` (scripted model) whose
 * first step asks the fault server for its process id, which a replay cannot reproduce, and whose second step
 * adds with the math server, which it does. The page starts `pda replay`, follows it without a reload and shows
 * which step differs, linked to the replayed session.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { distPath } from "../../core/index.js";
import {
  CHROMIUM,
  achieved,
  code,
  folder,
  hasChromium,
  snap,
  startUiChild,
  type Folder,
  type UiChild,
} from "./harness.js";

const PLAN = ["Step 0: ask the server for its pid", "Step 1: add 2 and 3"];

let f: Folder;
let ui: UiChild;
let browser: Browser;
let logged: string;
const shots = process.env.PDA_UI_SCREENSHOTS;

async function page(width = 1280, height = 800): Promise<Page> {
  const p = await browser.newPage({ viewport: { width, height } });
  p.on("pageerror", (e) => {
    throw e;
  });
  return p;
}

describe.skipIf(!hasChromium)("replaying a session from its page, in Chromium", () => {
  beforeAll(async () => {
    f = folder("pda-ui-replay-");
    writeFileSync(
      join(f.config, "mcp_server_config.yaml"),
      stringify({
        servers: [
          { id: "math", command: process.execPath, args: [distPath("mcp_servers/math/server.js")] },
          { id: "fault", command: process.execPath, args: [distPath("mcp_servers/testing/fault_server.js")] },
        ],
      }),
    );
    const script = f.file("script.yaml", {
      perception: [snap(), snap({ local_reasoning: "got the pid" }), achieved("5")],
      decision: [code(PLAN, 0, "return await pid()", "pid"), code(PLAN, 1, "return await add(2, 3)", "add")],
    });
    const r = await f.pda(["run", "What is the pid, and 2 + 3?", "--model", `scripted:${script}`, "--json"]);
    const out = JSON.parse(r.stdout) as { session_id: string; status: string };
    expect(out.status, r.stderr).toBe("succeeded");
    logged = out.session_id;
    ui = await startUiChild(f, ["--replay"]);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await ui?.stop();
    f?.close();
  });

  it("starts pda replay from the page, follows it, and shows the step that differs", async () => {
    const p = await page();
    await p.goto(`${ui.url}#/s/${logged}`);
    await p.waitForSelector("form.replay-form button");
    await p.evaluate(() => ((globalThis as unknown as { __marker: number }).__marker = 7));
    await p.click("form.replay-form button");
    const verdict = p.locator(".replay-verdict");
    await verdict.waitFor({ timeout: 90_000 });
    expect(await verdict.innerText()).toMatch(/^Replayed as \w{8}: same final answer; 1 step differs$/);
    // The page followed the replay without a reload.
    expect(await p.evaluate(() => (globalThis as unknown as { __marker?: number }).__marker)).toBe(7);

    const rows = p.locator("table.differences tbody tr");
    expect(await rows.count()).toBe(1);
    const cells = await rows.first().locator("td").allInnerTexts();
    expect(cells[0]).toBe("step 0");
    expect(cells[1]).toBe("pid");
    const [was, now] = [JSON.parse(cells[2]!), JSON.parse(cells[3]!)] as { ok: boolean; value?: unknown }[];
    expect(was).toMatchObject({ ok: true });
    expect(now).toMatchObject({ ok: true });
    expect(now!.value).not.toEqual(was!.value);
    expect(await p.locator("#step-0 .replay-differs").count()).toBe(1);
    expect(await p.locator("#step-1 .replay-differs").count()).toBe(0);
    if (shots) await p.screenshot({ path: join(shots, "replay.png"), fullPage: true });

    // The replayed session is in the store under the linked id, as pda replay ran it.
    const link = verdict.locator("a");
    const replayed = (await link.getAttribute("href"))!.replace("#/s/", "");
    await link.click();
    await p.waitForSelector(`.crumbs:has-text('${replayed}')`);
    expect(await p.locator("h1").innerText()).toBe("What is the pid, and 2 + 3?");
    expect(await p.locator(".session-head .badge").first().innerText()).toBe("succeeded");
    expect(await p.locator("#step-1 .result pre").innerText()).toBe("5");
    await p.close();
  });

  it("refuses a bad replay request with a clear error", async () => {
    const r = await fetch(`${ui.url}api/sessions/${logged}/replay`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ profile: "../etc" }),
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toMatch(
      /bad replay request: profile: a profile name/,
    );
  });
});
