/**
 * The UI's HTTP routes (Hono): the static page, a JSON API over the store, and server-sent events for live
 * pages. Every request first passes the host guard (DNS rebinding) and, when the server is reachable from
 * other machines, the token check. No CORS headers are sent: only pages served from here may call the API.
 */
import { timingSafeEqual } from "node:crypto";
import { Hono, type Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { secureHeaders } from "hono/secure-headers";
import { streamSSE } from "hono/streaming";
import { isPdaError } from "../core/index.js";
import { BrowseOptions, type SessionStore } from "../memory/index.js";
import type { HostGuard } from "../mcp_servers/index.js";
import type { Resumer } from "./answer.js";
import { batchComparison, batchPage } from "./batch.js";
import type { Replayer } from "./replay.js";
import type { RobotRenders } from "./robot.js";
import { ChangeFeed } from "./live.js";
import type { StaticFiles } from "./static.js";
import { sessionPage } from "./view.js";

export interface AppOptions {
  store: SessionStore;
  guard: HostGuard;
  files: StaticFiles;
  /** When set, every request must carry it (query `token`, the cookie it sets, or a Bearer header). */
  token?: string;
  /** Continues sessions answered from the page; without it, answering is refused (the server is read-only). */
  resumer?: Resumer;
  /** Replays sessions from their page; without it, replaying is refused (pda ui --replay sets it). */
  replayer?: Replayer;
  /** Draws robot sessions' scenes before and after each step; without it, pages show no renders. */
  renders?: RobotRenders;
  /** How often live pages check the store for changes (ms). */
  liveIntervalMs?: number;
}

const TOKEN_COOKIE = "pda_ui_token";

function sameToken(a: string | undefined, b: string): boolean {
  if (a === undefined) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A store error as an HTTP answer: unknown ids are 404, bad paging or filters 400. */
function failure(c: Context, e: unknown): Response {
  if (isPdaError(e)) {
    const status =
      e.code === "STORE_NOT_FOUND"
        ? 404
        : e.code === "STORE_AMBIGUOUS_ID" || e.code === "STORE_NOT_WAITING"
          ? 409
          : 400;
    return c.json({ error: e.message, code: e.code }, status);
  }
  throw e;
}

/** The list filters from the query string; undefined for an empty field. */
function browseQuery(c: Context) {
  const q = (name: string) => {
    const v = c.req.query(name)?.trim();
    return v ? v : undefined;
  };
  const limit = q("limit");
  return BrowseOptions.safeParse({
    search: q("q"),
    status: q("status"),
    agent: q("agent"),
    batch_run: q("run"),
    since: q("since"),
    until: q("until"),
    after: q("after"),
    limit: limit === undefined ? undefined : Number(limit),
  });
}

export function createApp(o: AppOptions): { app: Hono; feed: ChangeFeed } {
  const { store, files } = o;
  const feed = new ChangeFeed(store, o.liveIntervalMs);
  const app = new Hono();

  app.use(async (c, next) => {
    const refusal = o.guard.refusal({ host: c.req.header("host"), origin: c.req.header("origin") });
    if (refusal) return c.text(`refused: ${refusal}\n`, 403);
    if (o.token !== undefined) {
      const given = c.req.query("token");
      if (sameToken(given, o.token)) {
        // The token leaves the address bar (and history) at once; the cookie carries it from here on.
        setCookie(c, TOKEN_COOKIE, o.token, { httpOnly: true, sameSite: "Strict", path: "/" });
        const url = new URL(c.req.url);
        url.searchParams.delete("token");
        return c.redirect(url.pathname + url.search, 303);
      }
      const bearer = c.req.header("authorization")?.replace(/^Bearer\s+/i, "");
      if (!sameToken(getCookie(c, TOKEN_COOKIE), o.token) && !sameToken(bearer, o.token)) {
        return c.text("this pda ui needs its token: open the address it printed when it started\n", 401);
      }
    }
    await next();
  });
  app.use(
    secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", "data:"],
        connectSrc: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
        formAction: ["'self'"],
      },
      referrerPolicy: "no-referrer",
      xFrameOptions: "DENY",
      strictTransportSecurity: false, // plain http on loopback
      crossOriginResourcePolicy: "same-origin",
    }),
  );
  app.use("/api/*", async (c, next) => {
    await next();
    c.header("Cache-Control", "no-store");
  });

  app.get("/", (c) => files.respond(c, "index.html"));
  app.get("/assets/:name", (c) => files.respond(c, c.req.param("name")));

  app.get("/api/sessions", (c) => {
    const parsed = browseQuery(c);
    if (!parsed.success) return c.json({ error: `bad filter: ${parsed.error.issues[0]?.message}` }, 400);
    try {
      return c.json(store.browseSessions(parsed.data));
    } catch (e) {
      return failure(c, e);
    }
  });

  app.get("/api/sessions/:id", (c) => {
    try {
      return c.json(sessionPage(store, c.req.param("id"), o));
    } catch (e) {
      return failure(c, e);
    }
  });

  // A prompt and raw response can be large: the timeline names them, this sends one on demand.
  app.get("/api/sessions/:id/llm/:n", (c) => {
    try {
      const call = store.llmCalls(c.req.param("id"))[Number(c.req.param("n"))];
      if (!call) return c.json({ error: `no model call ${c.req.param("n")} in this session` }, 404);
      return c.json({ prompt: call.prompt, raw_response: call.raw_response, error: call.error ?? null });
    } catch (e) {
      return failure(c, e);
    }
  });

  // One session, live: its page data each time it changes.
  app.get("/api/sessions/:id/live", (c) => {
    let id: string;
    try {
      id = store.resolveId(c.req.param("id"));
    } catch (e) {
      return failure(c, e);
    }
    const known = c.req.query("version");
    return streamSSE(c, async (stream) => {
      let last = known;
      const push = () => {
        const page = sessionPage(store, id, o);
        if (page.version === last) return;
        last = page.version;
        void stream.writeSSE({ event: "session", data: JSON.stringify(page) });
      };
      await live(stream, feed, push);
    });
  });

  // Anything changed: the list page reloads its first page.
  app.get("/api/live", (c) =>
    streamSSE(c, async (stream) => {
      await live(stream, feed, () => void stream.writeSSE({ event: "changed", data: "" }));
    }),
  );

  // The writes: an answer to the question a session waits on, and (with --replay) a replay. JSON only, so a
  // page elsewhere cannot post them as a form (and its Origin is refused above).
  app.post("/api/sessions/:id/answer", async (c) => {
    if (!o.resumer) return c.json({ error: "this pda ui is read-only" }, 403);
    if (!/^application\/json\b/.test(c.req.header("content-type") ?? "")) {
      return c.json({ error: "send the answer as application/json" }, 415);
    }
    const body: unknown = await c.req.json().catch(() => undefined);
    try {
      return c.json(o.resumer.answer(c.req.param("id"), body), 202);
    } catch (e) {
      return failure(c, e);
    }
  });
  app.post("/api/sessions/:id/replay", async (c) => {
    if (!o.replayer) {
      return c.json({ error: "this pda ui does not replay sessions: start it with pda ui --replay" }, 403);
    }
    if (!/^application\/json\b/.test(c.req.header("content-type") ?? "")) {
      return c.json({ error: "send the replay request as application/json" }, 415);
    }
    const body: unknown = await c.req.json().catch(() => undefined);
    try {
      return c.json(o.replayer.start(c.req.param("id"), body), 202);
    } catch (e) {
      return failure(c, e);
    }
  });

  // A robot session's scene after its first `pos` calls. The address's `v` names those calls, so an image
  // whose `v` matches is final and cached for good; a stale `v` (a live session moved on) is not cached.
  app.get("/robot/:id/:file", async (c) => {
    const m = /^(\d+)\.png$/.exec(c.req.param("file"));
    if (!m || !o.renders) return c.json({ error: `no such render: ${c.req.path}` }, 404);
    try {
      const { png, immutable } = await o.renders.image(c.req.param("id"), Number(m[1]), c.req.query("v"));
      c.header("Content-Type", "image/png");
      c.header("Cache-Control", immutable ? "private, max-age=31536000, immutable" : "no-store");
      return c.body(new Uint8Array(png));
    } catch (e) {
      return failure(c, e);
    }
  });

  app.get("/api/batch", (c) => c.json(store.batchRuns()));
  app.get("/api/batch/:id", (c) => {
    try {
      return c.json(batchPage(store, c.req.param("id")));
    } catch (e) {
      return failure(c, e);
    }
  });
  app.get("/api/batch/:a/compare/:b", (c) => {
    try {
      return c.json(batchComparison(store, c.req.param("a"), c.req.param("b")));
    } catch (e) {
      return failure(c, e);
    }
  });

  app.notFound((c) => c.json({ error: `no such page: ${c.req.path}` }, 404));
  return { app, feed };
}

/** Hold an SSE stream open, calling `push` now and on each store change, until the page goes away. */
async function live(
  stream: { onAbort(fn: () => void): void; writeSSE(m: { event?: string; data: string }): Promise<void> },
  feed: ChangeFeed,
  push: () => void,
): Promise<void> {
  push();
  await new Promise<void>((resolve) => {
    const unsubscribe = feed.subscribe(push);
    stream.onAbort(() => {
      unsubscribe();
      resolve();
    });
  });
}
