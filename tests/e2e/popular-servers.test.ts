/**
 * Two of npm's most used third-party MCP servers, as people run them, through `pda exec`: Microsoft's
 * `@playwright/mcp` and Google's `chrome-devtools-mcp`, each driving Debian's Chromium (headless, a profile of
 * its own) against a page served on 127.0.0.1. The sandbox code reads a page, clicks a button found through
 * the server's accessibility snapshot, and reads the page again; the other server opens the same page.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../core/index.js";

const CHROMIUM = process.env.PDA_CHROMIUM ?? "/usr/bin/chromium";
const PAGE = `<!doctype html><title>Order 42</title><h1>Order 42</h1><p id="s">status: shipped</p>
<button onclick="document.getElementById('s').textContent='status: delivered'">Mark delivered</button>`;

let dir: string;
let http: Server;
let url: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pda-e2e-popular-"));
  http = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end(PAGE));
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/order`;
  const bin = (p: string) => join(PACKAGE_ROOT, "node_modules", p);
  writeFileSync(
    join(dir, "mcp_server_config.yaml"),
    stringify({
      servers: [
        {
          id: "browser",
          command: process.execPath,
          args: [
            bin("@playwright/mcp/cli.js"),
            // Its snapshots and console logs go to files: in the test's folder, not the repository.
            "--output-dir",
            join(dir, "playwright-output"),
            "--headless",
            "--isolated",
            "--no-sandbox",
            "--executable-path",
            CHROMIUM,
          ],
          connect_timeout_ms: 60_000,
        },
        {
          id: "devtools",
          command: process.execPath,
          args: [
            bin("chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js"),
            "--headless",
            "--isolated",
            "--executablePath",
            CHROMIUM,
            "--chromeArg=--no-sandbox",
            "--no-usage-statistics",
          ],
          connect_timeout_ms: 60_000,
        },
      ],
    }),
  );
});
afterAll(async () => {
  await new Promise((r) => http?.close(r));
  rmSync(dir, { recursive: true, force: true });
});

/** `pda exec` of this code; exit code and the JSON it printed. */
function exec(code: string): Promise<{ code: number; result: Record<string, unknown>; err: string }> {
  const file = join(dir, `step${Math.random().toString(36).slice(2)}.js`);
  writeFileSync(file, code);
  const args = [join(PACKAGE_ROOT, "dist/main.js"), "--config", dir, "--db", join(dir, "pda.db")];
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      [...args, "exec", file, "--timeout", "2m"],
      { cwd: dir, env: { ...process.env, NO_COLOR: "1" }, timeout: 180_000 },
      (e, out, err) =>
        resolve({
          code: e ? ((e as { code?: number }).code ?? 1) : 0,
          result: JSON.parse(out || "{}") as Record<string, unknown>,
          err,
        }),
    ),
  );
}

describe.skipIf(!existsSync(CHROMIUM))("popular third-party servers", () => {
  it("@playwright/mcp: read a page, click the button its snapshot names, read the change", async () => {
    const r = await exec(`
      await browser.browser_navigate({ url: ${JSON.stringify(url)} });
      const before = await browser.browser_snapshot({});
      const ref = /button "Mark delivered" \\[ref=(\\w+)\\]/.exec(before)[1];
      await browser.browser_click({ element: "Mark delivered button", target: ref });
      const after = await browser.browser_snapshot({});
      await browser.browser_close({});
      return { before, after };
    `);
    expect({ code: r.code, ok: r.result.ok, error: r.result.error }).toEqual({
      code: 0,
      ok: true,
      error: undefined,
    });
    const value = r.result.value as { before: string; after: string };
    expect(value.before).toContain("Page Title: Order 42");
    expect(value.before).toContain('paragraph [ref=e3]: "status: shipped"');
    expect(value.after).toContain("status: delivered");
    const calls = r.result.tool_calls as Array<{ server: string; tool: string; ok: boolean }>;
    expect(calls.map((c) => `${c.server}.${c.tool}:${c.ok}`)).toEqual([
      "browser.browser_navigate:true",
      "browser.browser_snapshot:true",
      "browser.browser_click:true",
      "browser.browser_snapshot:true",
      "browser.browser_close:true",
    ]);
  });

  it("chrome-devtools-mcp: open the page, find its heading in the snapshot, and a wrong page id is the server's error", async () => {
    const r = await exec(`
      const pages = await devtools.new_page({ url: ${JSON.stringify(url)} });
      const id = Number(/(\\d+): Order 42/.exec(pages)[1]);
      const snap = await devtools.take_snapshot({ pageId: id });
      let wrong;
      try { await devtools.take_snapshot({ pageId: 999 }); } catch (e) { wrong = { code: e.code, message: e.message }; }
      return { pages, snap, wrong };
    `);
    expect({ code: r.code, ok: r.result.ok, error: r.result.error }).toEqual({
      code: 0,
      ok: true,
      error: undefined,
    });
    const value = r.result.value as { pages: string; snap: string; wrong: { code: string; message: string } };
    expect(value.pages).toMatch(/\d+: Order 42 \(http:\/\/127\.0\.0\.1:\d+\/order\) \[selected\]/);
    expect(value.snap).toContain('heading "Order 42"');
    expect(value.snap).toContain("status: shipped");
    expect(value.wrong.code).toBe("TOOL_ERROR");
    expect(value.wrong.message).toContain("No page found");
  });
});
