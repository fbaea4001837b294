/** The app's request checks, in process on a real store file: the token off loopback, the host guard, errors. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { newSession } from "../../core/index.js";
import { HostGuard } from "../../mcp_servers/index.js";
import { SessionStore } from "../../memory/index.js";
import { StaticFiles, createApp } from "../index.js";

let dir: string;
let store: SessionStore;
const files = new StaticFiles();

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-ui-app-"));
  store = SessionStore.open(join(dir, "pda.db"));
  store.startSession(newSession("q", "s-1", new Date().toISOString()));
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const host = { host: "10.0.0.5:4646" };

describe("the ui app", () => {
  it("with a token, refuses requests without it and lets the token in once, as a cookie", async () => {
    const { app, feed } = createApp({
      store,
      guard: new HostGuard(["10.0.0.5"]),
      files,
      token: "secret-token",
    });
    try {
      expect((await app.request("/api/sessions", { headers: host })).status).toBe(401);
      expect((await app.request("/api/sessions?token=wrong", { headers: host })).status).toBe(401);
      const entry = await app.request("/?token=secret-token", { headers: host });
      expect(entry.status).toBe(303);
      expect(entry.headers.get("location")).toBe("/");
      const cookie = entry.headers.get("set-cookie")!;
      expect(cookie).toMatch(/pda_ui_token=secret-token/);
      expect(cookie).toMatch(/HttpOnly/);
      expect(cookie).toMatch(/SameSite=Strict/);
      const withCookie = await app.request("/api/sessions", {
        headers: { ...host, cookie: cookie.split(";")[0]! },
      });
      expect(withCookie.status).toBe(200);
      const bearer = await app.request("/api/sessions", {
        headers: { ...host, authorization: "Bearer secret-token" },
      });
      expect(((await bearer.json()) as { items: unknown[] }).items).toHaveLength(1);
    } finally {
      feed.stop();
    }
  });

  it("refuses a host it does not serve, and answers unknown sessions and bad filters with 404 and 400", async () => {
    const { app, feed } = createApp({ store, guard: new HostGuard(), files });
    try {
      expect((await app.request("/api/sessions", { headers: { host: "evil.example" } })).status).toBe(403);
      const local = { headers: { host: "127.0.0.1:4646" } };
      expect((await app.request("/api/sessions/nope", local)).status).toBe(404);
      const bad = await app.request("/api/sessions?status=sleeping", local);
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: string }).error).toMatch(/bad filter/);
      expect((await app.request("/assets/../../package.json", local)).status).toBe(404);
      // Without a resumer the app is read-only.
      const post = await app.request("/api/sessions/s-1/answer", {
        method: "POST",
        headers: { ...local.headers, "content-type": "application/json" },
        body: "{}",
      });
      expect(post.status).toBe(403);
    } finally {
      feed.stop();
    }
  });

  it("lists batch runs and gives one run with its items", async () => {
    store.startBatchRun({ id: "run-1", input_file: "q.csv" });
    store.saveBatchItem({
      run_id: "run-1",
      item_key: "1",
      query: "q",
      status: "succeeded",
      session_id: "s-1",
      output: null,
    });
    store.finishBatchRun("run-1");
    const { app, feed } = createApp({ store, guard: new HostGuard(), files });
    try {
      const local = { headers: { host: "localhost:4646" } };
      const runs = (await (await app.request("/api/batch", local)).json()) as { id: string; items: number }[];
      expect(runs).toEqual([
        expect.objectContaining({ id: "run-1", items: 1, item_statuses: { succeeded: 1 } }),
      ]);
      const one = (await (await app.request("/api/batch/run-1", local)).json()) as {
        run: { input_file: string };
        items: { session_id: string }[];
      };
      expect(one.run.input_file).toBe("q.csv");
      expect(one.items.map((i) => i.session_id)).toEqual(["s-1"]);
      expect((await app.request("/api/batch/nope", local)).status).toBe(404);
    } finally {
      feed.stop();
    }
  });
});
