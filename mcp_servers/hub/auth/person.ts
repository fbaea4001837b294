/**
 * The person's part of a login: a callback server on loopback that the authorization server redirects the
 * browser to, the authorization URL shown (and opened, when a browser command is known), and for a browser on
 * another machine, the redirected URL (or just its code) pasted back.
 */
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import { createInterface } from "node:readline";
import type { AddressInfo } from "node:net";

/** How long a login waits for the person before it gives up. */
export const PERSON_WAIT_MS = 5 * 60_000;

export interface Callback {
  /** `http://127.0.0.1:<port>/callback`, the redirect URL to register and send. */
  redirectUrl: string;
  /** The query of the first request to the callback path. */
  params: Promise<URLSearchParams>;
  close(): void;
}

const PAGE = (ok: boolean) =>
  `<!doctype html><meta charset="utf-8"><title>pda</title><p>${
    ok ? "pda is authorized. You can close this tab." : "Authorization failed: see the terminal."
  }</p>`;

/** Starts the loopback callback on a free port (127.0.0.1 only: nothing off this machine can reach it). */
export async function startCallback(): Promise<Callback> {
  let resolve!: (p: URLSearchParams) => void;
  const params = new Promise<URLSearchParams>((r) => (resolve = r));
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/callback") {
      res.writeHead(404).end();
      return;
    }
    const ok = url.searchParams.has("code") && !url.searchParams.has("error");
    res.writeHead(ok ? 200 : 400, { "content-type": "text/html; charset=utf-8" }).end(PAGE(ok));
    resolve(url.searchParams);
  });
  await new Promise<void>((ok, fail) => {
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => ok());
  });
  server.unref(); // a person who never comes back must not keep pda alive
  const { port } = server.address() as AddressInfo;
  return {
    redirectUrl: `http://127.0.0.1:${port}/callback`,
    params,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** A pasted redirect URL gives its query; anything else is taken as the bare authorization code. */
export function parsePasted(text: string): URLSearchParams {
  const t = text.trim();
  try {
    const url = new URL(t);
    if (url.searchParams.has("code") || url.searchParams.has("error")) return url.searchParams;
  } catch {
    // not a URL: a code
  }
  return new URLSearchParams({ code: t });
}

/** Who completes an authorization, and how. */
export interface Person {
  /**
   * Shows (or opens) `url` for `server`'s login. Resolves with the redirect's query when the person pastes it;
   * never resolves when the answer can only come through the loopback callback.
   */
  present(url: URL, server: string, signal: AbortSignal): Promise<URLSearchParams>;
}

/** Runs `command` (a program and its arguments, split on spaces) with the URL as its last argument. */
export function openWith(command: string, url: string): Promise<boolean> {
  const [program, ...args] = command.trim().split(/\s+/);
  if (!program) return Promise.resolve(false);
  return new Promise((resolve) => {
    const child = spawn(program, [...args, url], { stdio: "ignore", detached: true });
    child.once("error", () => resolve(false));
    child.once("spawn", () => {
      child.unref();
      resolve(true);
    });
  });
}

/** The command that opens a browser: PDA_BROWSER, else BROWSER, else the platform's opener. */
export function browserCommand(env: NodeJS.ProcessEnv = process.env): string {
  return (
    env.PDA_BROWSER ||
    env.BROWSER ||
    (process.platform === "darwin" ? "open" : process.platform === "win32" ? "explorer" : "xdg-open")
  );
}

export interface PersonOptions {
  /** Where the URL and the prompts are written (stderr: stdout may be a command's JSON). */
  out: NodeJS.WritableStream;
  /** A command to open the URL with, or undefined to only print it. */
  open?: string;
  /** Read a pasted redirect URL or code from this stream (a terminal). */
  paste?: NodeJS.ReadableStream;
}

export function person(opts: PersonOptions): Person {
  return {
    async present(url, server, signal) {
      opts.out.write(
        `Authorize pda for server "${server}": open this URL in a browser:\n\n  ${url.href}\n\n`,
      );
      if (opts.open && !(await openWith(opts.open, url.href)))
        opts.out.write(`(could not run "${opts.open}": open the URL yourself)\n`);
      if (!opts.paste) return new Promise<URLSearchParams>(() => {});
      opts.out.write(
        "Waiting for the browser to come back. If it cannot reach this machine, paste the URL it was " +
          "redirected to (or the code) here:\n",
      );
      const rl = createInterface({ input: opts.paste, terminal: false });
      signal.addEventListener("abort", () => rl.close(), { once: true });
      try {
        for await (const line of rl) if (line.trim()) return parsePasted(line);
      } finally {
        rl.close();
      }
      return new Promise<URLSearchParams>(() => {}); // the terminal closed: the callback may still come
    },
  };
}

/**
 * Who is there for a login started by a server's 401 in the middle of a command: a configured PDA_BROWSER
 * (opens the URL), else a terminal (prints it; the callback brings the answer back); else no one.
 */
export function ambientPerson(env: NodeJS.ProcessEnv = process.env): Person | undefined {
  if (env.PDA_BROWSER) return person({ out: process.stderr, open: env.PDA_BROWSER });
  if (process.stdin.isTTY && process.stderr.isTTY) return person({ out: process.stderr });
  return undefined;
}
