/**
 * `pda` as a child process on a folder's config and store, for the e2e tests that kill it (SIGKILL) and resume
 * it: a folder whose config connects the tests' ledger server (which writes down every call it receives), and
 * the calls it wrote down.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { PACKAGE_ROOT } from "../../core/index.js";

const MAIN = join(PACKAGE_ROOT, "dist", "main.js");

/** Children still running, so a failed test can kill them in its afterAll. */
export const running = new Set<ChildProcess>();

export interface PdaChild {
  child: ChildProcess;
  done: Promise<{ code: number | null; stderr: string; stdout: string }>;
}

export function pdaChild(folder: string, db: string, args: string[]): PdaChild {
  const child = spawn(process.execPath, [MAIN, "--config", folder, "--db", db, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NO_COLOR: "1" },
  });
  running.add(child);
  let stderr = "";
  let stdout = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  const done = new Promise<{ code: number | null; stderr: string; stdout: string }>((resolve) =>
    child.once("close", (code) => {
      running.delete(child);
      resolve({ code, stderr, stdout });
    }),
  );
  return { child, done };
}

/** The calls the ledger server received (mcp_servers/testing/ledger_server.ts), in order. */
export function ledgerLines(file: string): Array<{ tool: string; id?: number }> {
  return existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { tool: string; id?: number })
    : [];
}

/** A folder with a config, a store and the ledger its server writes. */
export interface ShopCase {
  folder: string;
  db: string;
  ledger: string;
  /** Writes a YAML file into the folder. */
  file(name: string, data: unknown): void;
}

/** A fresh folder `name` under `dir` whose config connects the ledger server as `shop`. */
export function shopCase(dir: string, name: string, delayMs: number): ShopCase {
  const folder = join(dir, name);
  const ledger = join(folder, "ledger.jsonl");
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder);
  const file = (f: string, data: unknown) => writeFileSync(join(folder, f), stringify(data));
  file("mcp_server_config.yaml", {
    servers: [
      {
        id: "shop",
        command: process.execPath,
        args: [join(PACKAGE_ROOT, "dist/mcp_servers/testing/ledger_server.js")],
        env: { LEDGER_FILE: ledger, LEDGER_DELAY_MS: String(delayMs) },
      },
    ],
  });
  return { folder, db: join(folder, "pda.db"), ledger, file };
}
