/**
 * Set-up shared by the CLI tests that run dist/main.js as a child process with scripted models: a temp folder
 * holding a config folder (the real math server) and the store, and a perception snapshot for the scripts.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { distPath } from "../core/index.js";

export interface PdaRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliFolder {
  /** The temp folder: the store (pda.db), HOME, and whatever else a test writes there. */
  dir: string;
  /** dir/config, whose mcp_server_config.yaml names the math server; the test adds profiles and agents. */
  config: string;
  /**
   * `pda <args>` with --config (this folder's unless given) and --db dir/pda.db. The environment is only
   * PATH, HOME=dir and NO_COLOR, so no key or user config of the machine running the tests leaks in; `env`
   * adds to it (e.g. GEMINI_BASE_URL). `input`, when given, is written to its stdin, which is then closed.
   */
  pda(args: string[], config?: string, env?: Record<string, string>, input?: string): Promise<PdaRun>;
  close(): void;
}

export function cliFolder(prefix: string): CliFolder {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const config = join(dir, "config");
  mkdirSync(config);
  writeFileSync(
    join(config, "mcp_server_config.yaml"),
    stringify({
      servers: [{ id: "math", command: process.execPath, args: [distPath("mcp_servers/math/server.js")] }],
    }),
  );
  return {
    dir,
    config,
    pda: (args, cfg = config, env = {}, input) =>
      new Promise((resolve) => {
        const child = execFile(
          process.execPath,
          [distPath("main.js"), "--config", cfg, "--db", join(dir, "pda.db"), ...args],
          { env: { PATH: process.env.PATH ?? "", HOME: dir, NO_COLOR: "1", ...env }, timeout: 60_000 },
          (err, stdout, stderr) =>
            resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        );
        if (input !== undefined) child.stdin?.end(input);
      }),
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A perception snapshot for a scripted model: the goal reached or not, with the summary it gives. */
export const snap = (achieved: boolean, summary = "not ready yet") => ({
  entities: [],
  result_requirement: "the two numbers",
  original_goal_achieved: achieved,
  reasoning: achieved ? "both computed" : "not yet",
  local_goal_achieved: achieved,
  local_reasoning: "-",
  last_tooluse_summary: "none",
  solution_summary: summary,
  confidence: 0.8,
});
