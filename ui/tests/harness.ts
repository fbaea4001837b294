/**
 * Set-up for the UI tests: a temp folder with a config (the real math server) and a store filled by real
 * `pda run` children, a real `pda ui` child, and Debian's Chromium driven by playwright-core.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { distPath } from "../../core/index.js";

export const CHROMIUM = process.env.PDA_CHROMIUM ?? "/usr/bin/chromium";
export const hasChromium = existsSync(CHROMIUM);

export interface Folder {
  dir: string;
  db: string;
  config: string;
  /** A YAML file in the folder. */
  file(name: string, data: unknown): string;
  pda(
    args: string[],
    env?: Record<string, string>,
  ): Promise<{ code: number; stdout: string; stderr: string }>;
  close(): void;
}

export function folder(prefix: string): Folder {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const config = join(dir, "config");
  mkdirSync(config);
  writeFileSync(
    join(config, "mcp_server_config.yaml"),
    stringify({
      servers: [{ id: "math", command: process.execPath, args: [distPath("mcp_servers/math/server.js")] }],
    }),
  );
  const db = join(dir, "pda.db");
  return {
    dir,
    db,
    config,
    file(name, data) {
      const p = join(dir, name);
      writeFileSync(p, stringify(data));
      return p;
    },
    pda: (args, env = {}) =>
      new Promise((resolve) => {
        execFile(
          process.execPath,
          [distPath("main.js"), "--config", config, "--db", db, ...args],
          { env: { PATH: process.env.PATH ?? "", HOME: dir, NO_COLOR: "1", ...env }, timeout: 90_000 },
          (err, stdout, stderr) =>
            resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        );
      }),
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface UiChild {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** `pda ui --port 0` as a child; resolves with the address it prints. */
export function startUiChild(
  f: Folder,
  extra: string[] = [],
  env: Record<string, string> = {},
): Promise<UiChild> {
  const args = [distPath("main.js"), "--config", f.config, "--db", f.db, "ui", "--port", "0", ...extra];
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? "", HOME: f.dir, NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /pda ui: (http:\/\/\S+)/.exec(out);
      if (m)
        resolve({
          url: m[1]!,
          child,
          stop: () =>
            new Promise<void>((done) => {
              if (child.exitCode !== null) return done();
              child.once("exit", () => done());
              child.kill("SIGTERM");
            }),
        });
    });
    child.once("exit", (code) =>
      reject(new Error(`pda ui exited ${code} before printing its address: ${err}`)),
    );
  });
}

// ---- scripted model replies ----

export { achieved, snap } from "../../agent/tests/harness.js";

export function code(planText: string[], stepIndex: number, source: string, description = "compute") {
  return { plan_text: planText, step_index: stepIndex, description, type: "CODE", code: source };
}

/** Poll `check` until it returns a value (not undefined) or the deadline passes. */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  ms = 60_000,
) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
