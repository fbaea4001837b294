/** Starting and stopping `pda ui`: the HTTP server on a loopback address (or --host, with a token). */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { ConfigError } from "../core/index.js";
import { HostGuard } from "../mcp_servers/index.js";
import type { SessionStore } from "../memory/index.js";
import { Resumer } from "./answer.js";
import { createApp } from "./app.js";
import { Replayer } from "./replay.js";
import { RobotRenders } from "./robot.js";
import { StaticFiles } from "./static.js";

export const DEFAULT_UI_PORT = 4646;
export const DEFAULT_UI_HOST = "127.0.0.1";

export interface UiOptions {
  store: SessionStore;
  /** Default 127.0.0.1. Any other address than a loopback one makes the server require a token. */
  host?: string;
  /** Default 4646; 0 picks a free port. */
  port?: number;
  liveIntervalMs?: number;
  /** The config answers are resumed and replays run with (pda ui --config). */
  config?: string;
  /** Let pages start `pda replay` of their session (it calls the live tools and writes a new session). */
  allowReplay?: boolean;
}

export interface RunningUi {
  /** The address to open; with a token, it carries it. */
  url: string;
  /** Set when the server requires a token. */
  token: string | undefined;
  close(): Promise<void>;
}

function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export async function startUi(o: UiOptions): Promise<RunningUi> {
  const host = o.host ?? DEFAULT_UI_HOST;
  const port = o.port ?? DEFAULT_UI_PORT;
  const token = isLoopbackHost(host) ? undefined : randomBytes(24).toString("base64url");
  const replayer = o.allowReplay ? new Replayer({ store: o.store, config: o.config }) : undefined;
  const renders = new RobotRenders(o.store);
  const resumer = new Resumer({ store: o.store, config: o.config });
  const { app, feed } = createApp({
    store: o.store,
    guard: new HostGuard([host].filter((h) => h !== "0.0.0.0" && h !== "::")),
    files: new StaticFiles(),
    token,
    resumer,
    replayer,
    renders,
    liveIntervalMs: o.liveIntervalMs,
  });
  // A resume's or a replay's end changes what a page shows (its state) without a write to the store.
  resumer.onEnd = () => feed.notify();
  if (replayer) replayer.onEnd = () => feed.notify();
  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port, hostname: host }, () => resolve(s as Server)) as Server;
    s.once("error", (e: NodeJS.ErrnoException) =>
      reject(
        e.code === "EADDRINUSE"
          ? new ConfigError(`port ${port} on ${host} is in use: pass --port <n> (0 picks a free one)`)
          : new ConfigError(`cannot listen on ${host}:${port}: ${e.message}`),
      ),
    );
  });
  const addr = server.address() as AddressInfo;
  const shown = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  const url = `http://${shown}:${addr.port}/${token ? `?token=${token}` : ""}`;
  return {
    url,
    token,
    close: () =>
      new Promise<void>((resolve) => {
        feed.stop();
        renders.close();
        server.close(() => resolve());
        // Live pages hold their event streams open; they reconnect to the next server.
        server.closeAllConnections();
      }),
  };
}

/** Open the address in the user's browser (--open); a failure to do so is only reported. */
export function openBrowser(url: string, onError: (message: string) => void): void {
  const [cmd, args] =
    process.platform === "darwin"
      ? ["open", [url]]
      : process.platform === "win32"
        ? ["cmd", ["/c", "start", "", url]]
        : ["xdg-open", [url]];
  const child = spawn(cmd, args as string[], { detached: true, stdio: "ignore" });
  child.on("error", (e) => onError(`could not open a browser (${cmd}): ${e.message}`));
  child.unref();
}
