/**
 * `pda ui`'s batch pages in Chromium: two real `pda batch` runs (the real @google/genai client against the fake
 * Gemini server, the real math server) of the same queries, the second after a fix; the run page shows its
 * summary and tool performance table, and the comparison page performance/'s comparison with its chart.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fakeAgent, queryOf } from "../../performance/testing/fake-agent.js";
import { startFakeGemini, type FakeGemini } from "../../testing/index.js";
import { CHROMIUM, folder, hasChromium, startUiChild, type Folder, type UiChild } from "./harness.js";

let f: Folder;
let ui: UiChild;
let browser: Browser;
let gemini: FakeGemini;
/** While set, the model cannot plan this query (its decision is not JSON), so the query fails. */
let broken: string | null = "What is 2 + 3?";
const runs: string[] = [];
const shots = process.env.PDA_UI_SCREENSHOTS;

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

describe.skipIf(!hasChromium)("pda ui's batch pages in Chromium", () => {
  beforeAll(async () => {
    f = folder("pda-ui-batch-");
    gemini = await startFakeGemini({
      handler: fakeAgent({
        fault: (req) =>
          broken !== null && queryOf(req) === broken && req.role === "decision"
            ? { text: "I will add them {" }
            : undefined,
      }),
    });
    const input = join(f.dir, "queries.csv");
    writeFileSync(
      input,
      [
        "Query,Tools Needed,Complexity,Expected",
        "What is 1 + 1?,add,low,2",
        "What is 2 + 3?,add,low,5",
        "What is 4 + 4?,add,low,8",
        "",
      ].join("\n"),
    );
    const env = { GEMINI_API_KEY: "test-key-not-secret-123", GEMINI_BASE_URL: gemini.url };
    for (const out of ["before", "after"]) {
      const r = await f.pda(
        ["batch", input, "--out", join(f.dir, out), "--concurrency", "1", "--no-memory"],
        env,
      );
      expect(r.code, r.stderr).toBe(0);
      broken = null; // the fix between the two runs
    }
    ui = await startUiChild(f);
    const list = (await (await fetch(`${ui.url}api/batch`)).json()) as { id: string; started_at: string }[];
    // Newest first: the run before the fix is the second.
    runs.push(list[1]!.id, list[0]!.id);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await ui?.stop();
    await gemini?.close();
    f?.close();
  });

  it("shows a run's summary and its tool performance table (tool_performance_status.csv's rows)", async () => {
    const p = await page();
    await p.goto(`${ui.url}#/batch/${runs[0]}`);
    await p.waitForSelector("table.tool-perf tbody tr");
    const facts = await p.locator("ul.facts").innerText();
    expect(facts).toContain("Queries: 3; succeeded 2 (66.7%)");
    expect(facts).toContain("Correct: 2 of 3 with an Expected answer (66.7%)");
    expect(facts).toContain(join(f.dir, "before"));
    const rows = await p.locator("table.tool-perf tbody tr").allInnerTexts();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.split("\t").slice(0, 5)).toEqual(["add", "math", "2", "100.0", "0"]);
    // The chart is an image that loaded, of this run.
    const chart = p.locator("figure.chart img");
    await expect
      .poll(() => chart.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth))
      .toBeGreaterThan(0);
    expect(decodeURIComponent((await chart.getAttribute("src"))!)).toContain("Sessions succeeded: 2 (of 3)");
    await shot(p, "batch-run");
    await p.close();
  });

  it("compares two runs with the chart, chosen from the later run's page", async () => {
    const p = await page();
    await p.goto(`${ui.url}#/batch/${runs[1]}`);
    await p.waitForSelector("form.compare select");
    await p.selectOption("form.compare select", runs[0]!);
    await p.click("form.compare button[type=submit]");
    await p.waitForSelector(".comparison table.report");
    expect(p.url()).toContain(`#/batch/${runs[0]}/compare/${runs[1]}`);
    expect(await p.locator("h1").innerText()).toMatch(/^Comparing .* \(A\) with .* \(B\)$/);

    const outcome = p.locator("section.report-section", { has: p.locator("h2", { hasText: /^Outcome$/ }) });
    const succeeded = await outcome.locator("tr", { hasText: "Succeeded" }).innerText();
    expect(succeeded.split("\t")).toEqual(["Succeeded", "2 (66.7%)", "3 (100.0%)", "+33.3 pts"]);
    const perTool = p.locator("section.report-section", { hasText: "Per-tool changes" });
    expect((await perTool.locator("tbody tr").innerText()).split("\t").slice(0, 4)).toEqual([
      "add",
      "math",
      "2",
      "3",
    ]);
    const changed = p.locator("section.report-section", { hasText: "Queries that changed outcome" });
    expect(await changed.locator("h2").innerText()).toBe(
      "Queries that changed outcome (1: 1 better, 0 worse)",
    );
    expect((await changed.locator("tbody tr").innerText()).split("\t").slice(0, 3)).toEqual([
      "What is 2 + 3?",
      "failed, wrong",
      "succeeded, correct",
    ]);

    const chart = p.locator("figure.chart img");
    await expect
      .poll(() => chart.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth))
      .toBeGreaterThan(0);
    const svg = decodeURIComponent((await chart.getAttribute("src"))!);
    expect(svg).toContain("Sessions succeeded: 2 → 3 (of 3 / 3)");
    expect(svg).toContain("100% (2/2)");
    expect(svg).toContain("100% (3/3)");
    await shot(p, "batch-compare-1280");
    await p.setViewportSize({ width: 400, height: 800 });
    await shot(p, "batch-compare-400");
    await p.close();
  });

  it("answers an unknown run with a clear 404", async () => {
    const r = await fetch(`${ui.url}api/batch/${runs[0]}/compare/no-such-run`);
    expect(r.status).toBe(404);
    expect(((await r.json()) as { error: string }).error).toMatch(/no batch run with id "no-such-run"/);
  });
});
