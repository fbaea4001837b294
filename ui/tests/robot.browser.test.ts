/**
 * A robot session's page, in Chromium: a real `pda run` (scripted model) drives the real robot server from two
 * CODE steps (reset and grasp, then carry and place). The page shows the scene drawn before and after each step
 * from the logged calls: real PNGs, the gripper moved between them, cached for good once the session ended.
 * A session that never used the robot shows none, and each call's arguments and result unfold under its row.
 * A `pda robot bench --model` episode, reset by the harness before its session runs, is drawn the same way.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT, distPath } from "../../core/index.js";
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

const PLAN = ["Step 0: reset, grasp the block and lift it", "Step 1: carry it to the zone, place, finish"];
const GRASP = `
  await reset({task: "put_block_in_target", seed: 6});
  const obs = await get_observation({format: "json"});
  const block = await detect_object({name: obs.instruction.split(" ")[2] + "_block"});
  const [bx, by, bz] = block.position;
  await open_gripper({width: 0.075});
  await move_to({x: bx, y: by, z: 0.2, yaw: block.yaw});
  await move_to({x: bx, y: by, z: bz, yaw: block.yaw});
  const grasp = await close_gripper({});
  await move_to({x: bx, y: by, z: 0.2});
  return grasp.holding;`;
const PLACE = `
  const obs = await get_observation({format: "json"});
  const block = await detect_object({name: obs.instruction.split(" ")[2] + "_block"});
  const zone = await detect_object({name: "target_zone"});
  const [zx, zy] = zone.position;
  await move_to({x: zx, y: zy, z: 0.2});
  await move_to({x: zx, y: zy, z: block.size[2] / 2 + 0.005});
  await open_gripper({});
  await move_to({x: zx, y: zy, z: 0.2});
  const check = await check_task_completion({});
  await finish({claimed_success: check.success, reason: "placed the block in the target zone"});
  return check.success;`;

/** A scripted model that solves put_block_in_target in one CODE step (mcp_servers/robot's own bench test). */
const BENCH_SCRIPT = join(PACKAGE_ROOT, "mcp_servers/robot/tests/fixtures/put_block.script.yaml");

let f: Folder;
let ui: UiChild;
let browser: Browser;
const ids: Record<string, string> = {};
const shots = process.env.PDA_UI_SCREENSHOTS;

async function run(name: string, query: string, script: unknown) {
  const r = await f.pda(["run", query, "--model", `scripted:${f.file(`${name}.yaml`, script)}`, "--json"]);
  const out = JSON.parse(r.stdout) as { session_id: string; status: string };
  expect(out.status, r.stderr).toBe("succeeded");
  ids[name] = out.session_id;
}

async function page(width = 1280, height = 800): Promise<Page> {
  const p = await browser.newPage({ viewport: { width, height } });
  p.on("pageerror", (e) => {
    throw e;
  });
  return p;
}

/** What the tests read of an image in the page (the tests are type-checked without the DOM's types). */
interface Img {
  src: string;
  complete: boolean;
  naturalWidth: number;
  naturalHeight: number;
  getAttribute(name: string): string | null;
  closest(selector: string): { id: string; querySelector(s: string): { textContent: string } };
}
type Doc = { document: { querySelectorAll(selector: string): Iterable<Img> } };

/** Wait until `n` images match `selector`, each loaded and decoded. */
function loaded(p: Page, selector: string, n: number) {
  return p.waitForFunction(
    ([sel, count]) => {
      const imgs = [...(globalThis as unknown as Doc).document.querySelectorAll(sel as string)];
      return imgs.length === count && imgs.every((i) => i.complete && i.naturalWidth > 0);
    },
    [selector, n] as const,
    { timeout: 120_000 },
  );
}

/** Each render's place, size and bytes (base64), read in the page. */
function images(p: Page) {
  return p.evaluate(() =>
    Promise.all(
      [...(globalThis as unknown as Doc).document.querySelectorAll(".renders img")].map(async (img) => {
        const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
        return {
          src: img.getAttribute("src")!,
          step: img.closest("section").id,
          side: img.closest("figure").querySelector("figcaption").textContent,
          width: img.naturalWidth,
          height: img.naturalHeight,
          png: btoa(String.fromCharCode(...bytes)),
        };
      }),
    ),
  );
}

describe.skipIf(!hasChromium)("a robot session's renders, in Chromium", () => {
  beforeAll(async () => {
    f = folder("pda-ui-robot-");
    writeFileSync(
      join(f.config, "mcp_server_config.yaml"),
      stringify({
        servers: [
          { id: "math", command: process.execPath, args: [distPath("mcp_servers/math/server.js")] },
          { id: "robot", command: process.execPath, args: [distPath("mcp_servers/robot/server.js")] },
        ],
      }),
    );
    await run("robot", "put the block in the target zone", {
      perception: [
        snap(),
        snap({ local_goal_achieved: true, local_reasoning: "holding the block" }),
        achieved("The block is in the zone."),
      ],
      decision: [code(PLAN, 0, GRASP, "reset and grasp"), code(PLAN, 1, PLACE, "carry and place")],
    });
    await run("math", "What is 2 + 3?", {
      perception: [snap(), achieved("5")],
      decision: [code(["Step 0: add"], 0, "return await add(2, 3)", "add")],
    });
    const bench = await f.pda([
      "robot",
      "bench",
      "--model",
      `scripted:${BENCH_SCRIPT}`,
      "--tasks",
      "put_block_in_target",
      "--seeds",
      "6-6",
      "--json",
      "--out",
      join(f.dir, "bench"),
    ]);
    expect(bench.code, bench.stderr).toBe(0);
    ui = await startUiChild(f);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await ui?.stop();
    f?.close();
  });

  it("draws the scene before and after each step from the logged calls, as real PNGs", async () => {
    const p = await page();
    await p.goto(`${ui.url}#/s/${ids.robot}`);
    await p.waitForSelector("#step-1 .renders");
    // Step 0 starts the episode: nothing to draw before it, said in words.
    expect(await p.locator("#step-0 .render.none").innerText()).toMatch(
      /Before\s+no scene yet: the episode starts in this step/,
    );
    // Scroll through so the lazy images load, then wait for all three to decode.
    for (const s of ["#step-0", "#step-1"]) await p.locator(`${s} .renders`).scrollIntoViewIfNeeded();
    await loaded(p, ".renders img", 3);
    const got = await images(p);
    expect(got.map((g) => `${g.step} ${g.side}`)).toEqual(["step-0 After", "step-1 Before", "step-1 After"]);
    for (const g of got) {
      expect(g.width).toBe(480);
      expect(g.height).toBeGreaterThan(0);
      expect(Buffer.from(g.png, "base64").subarray(1, 4).toString()).toBe("PNG");
    }
    const [afterGrasp, beforePlace, afterPlace] = got;
    // Nothing moved between the two steps: the same scene, at the same address.
    expect(beforePlace!.src).toBe(afterGrasp!.src);
    // The gripper carried the block to the zone: the scene changed.
    expect(afterPlace!.png).not.toBe(beforePlace!.png);
    expect(await p.locator(".robot-note").count()).toBe(0);
    if (shots) {
      await p.screenshot({ path: join(shots, "robot-1280.png"), fullPage: true });
      await p.locator("#step-1").screenshot({ path: join(shots, "robot-step.png") });
    }
    await p.close();
  });

  it("draws a pda robot bench --model episode from the reset the harness made for its session", async () => {
    const list = (await (await fetch(`${ui.url}api/sessions?agent=robot-bench`)).json()) as {
      items: { session_id: string }[];
    };
    expect(list.items).toHaveLength(1);
    const id = list.items[0]!.session_id;
    const p = await page();
    await p.goto(`${ui.url}#/s/${id}`);
    await p.waitForSelector("#step-0 .renders");
    // Both sides of the one step are drawn (no reason in words), and the step moved the block.
    expect(await p.locator(".robot-note").count()).toBe(0);
    expect(await p.locator(".render.none").count()).toBe(0);
    await p.locator("#step-0 .renders").scrollIntoViewIfNeeded();
    await loaded(p, ".renders img", 2);
    const got = await images(p);
    expect(got.map((g) => `${g.step} ${g.side}`)).toEqual(["step-0 Before", "step-0 After"]);
    for (const g of got) expect(Buffer.from(g.png, "base64").subarray(1, 4).toString()).toBe("PNG");
    expect(got[1]!.png).not.toBe(got[0]!.png);
    // The reset is the session's first call, outside any step: the episode the harness really started.
    const reset = p.locator(".card.tool").first();
    expect(await reset.locator("header").innerText()).toMatch(/outside a step/);
    await reset.locator("button.call-toggle").click();
    const detail = (await reset.locator("tr.call-detail").textContent())!;
    expect(detail).toMatch(/"task": "put_block_in_target"/);
    expect(detail).toMatch(/"seed": 6/);
    expect(detail).toMatch(/Result[\s\S]*"instruction": "put the \w+ block/);
    await p.close();
    // `pda show` lists the reset as a call outside the steps.
    const show = await f.pda(["show", id]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toMatch(/tool robot\.reset ok/);
  });

  it("caches a finished session's renders for good, and answers a position past the episode with a reason", async () => {
    const p = await page();
    await p.goto(`${ui.url}#/s/${ids.robot}`);
    const src = await p.locator("#step-1 .renders img").last().getAttribute("src");
    const ok = await p.request.get(`${ui.url.replace(/\/$/, "")}${src}`);
    expect(ok.status()).toBe(200);
    expect(ok.headers()["content-type"]).toBe("image/png");
    expect(ok.headers()["cache-control"]).toMatch(/immutable/);
    const past = await p.request.get(`${ui.url.replace(/\/$/, "")}/robot/${ids.robot}/999.png`);
    expect(past.status()).toBe(400);
    expect(((await past.json()) as { error: string }).error).toMatch(
      /no position 999: the episode has \d+ calls/,
    );
    await p.close();
  });

  it("unfolds a call's arguments and result under its row, as text", async () => {
    const p = await page();
    await p.goto(`${ui.url}#/s/${ids.robot}`);
    await p.locator("#step-0 table.tools button.call-toggle").first().click();
    const reset = p.locator("#step-0 table.tools tr.call-detail").first();
    await reset.waitFor({ state: "visible" });
    const text = (await reset.textContent())!;
    expect(text).toMatch(/"task": "put_block_in_target"/);
    expect(text).toMatch(/"seed": 6/);
    expect(text).toMatch(/Result[\s\S]*"instruction": "put the \w+ block/);
    await p.close();
  });

  it("shows no renders for a session that never used the robot, and lays out on a narrow window", async () => {
    const p = await page();
    await p.goto(`${ui.url}#/s/${ids.math}`);
    await p.waitForSelector("#step-0");
    expect(await p.locator(".renders").count()).toBe(0);
    expect(await p.locator(".robot-note").count()).toBe(0);
    await p.close();

    const narrow = await page(390, 844);
    await narrow.goto(`${ui.url}#/s/${ids.robot}`);
    await narrow.waitForSelector("#step-1 .renders img");
    const box = await narrow.locator("#step-1 .renders img").first().boundingBox();
    expect(box!.width).toBeLessThanOrEqual(390);
    expect(box!.width).toBeGreaterThan(200);
    if (shots) {
      await narrow.locator("#step-1").scrollIntoViewIfNeeded();
      await loaded(narrow, "#step-1 .renders img", 2);
      await narrow.screenshot({ path: join(shots, "robot-narrow.png") });
    }
    await narrow.close();
  });
});
