/**
 * Config discovery through the real CLI, run from a project folder with no --config: --config, PDA_CONFIG,
 * the nearest .pda/, the user's config folder, the bundled config/ — and `pda config` naming what it used.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG_DIR, distPath } from "../core/index.js";
import type { PdaRun } from "./harness.js";

let home: string;
let project: string;
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "pda-config-"));
  project = join(home, "project");
  mkdirSync(join(project, ".pda"), { recursive: true });
  mkdirSync(join(project, "src", "deep"), { recursive: true });
  mkdirSync(join(home, ".config", "pda"), { recursive: true });
  mkdirSync(join(home, "elsewhere"));
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** `pda <args>` in `cwd`, with HOME the temp folder and no --config. */
const pda = (args: string[], cwd: string, env: Record<string, string> = {}): Promise<PdaRun> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      [distPath("main.js"), "--db", join(home, "pda.db"), ...args],
      { cwd, env: { PATH: process.env.PATH ?? "", HOME: home, NO_COLOR: "1", ...env }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });

interface Report {
  config: { dir: string; source: string };
  files: Array<{ name: string; path: string; source: string }>;
  store: { path: string; source: string };
}
const report = async (cwd: string, args: string[] = [], env?: Record<string, string>) => {
  const r = await pda([...args, "config", "--json"], cwd, env);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Report;
};

describe("config discovery", () => {
  it("finds the project's .pda/ from a sub-folder; files it lacks come from the bundled config/", async () => {
    writeFileSync(join(project, ".pda", "models.yaml"), "roles: {}\n");
    const r = await report(join(project, "src", "deep"));
    expect(r.config).toEqual({ dir: join(project, ".pda"), source: "project" });
    const byName = Object.fromEntries(r.files.map((f) => [f.name, f]));
    expect(byName["models.yaml"]).toEqual({
      name: "models.yaml",
      path: join(project, ".pda", "models.yaml"),
      source: "project",
    });
    expect(byName["profiles.yaml"]).toMatchObject({
      path: join(DEFAULT_CONFIG_DIR, "profiles.yaml"),
      source: "bundled",
    });
    expect(r.store).toEqual({ path: join(home, "pda.db"), source: "--db" });
  }, 60_000);

  it("a run really uses the project's file: a broken one is named in the error", async () => {
    writeFileSync(join(project, ".pda", "profiles.yaml"), "default: nosuch\nprofiles: {}\n");
    const r = await pda(["run", "hi", "--model", "scripted:/nope.yaml"], join(project, "src"));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(join(project, ".pda", "profiles.yaml"));
    rmSync(join(project, ".pda", "profiles.yaml"));
  }, 60_000);

  it("outside a project: the user's config folder, else the bundled config/", async () => {
    const user = await report(join(home, "elsewhere"));
    expect(user.config).toEqual({ dir: join(home, ".config", "pda"), source: "user" });
    rmSync(join(home, ".config", "pda"), { recursive: true });
    const bundled = await report(join(home, "elsewhere"));
    expect(bundled.config).toEqual({ dir: DEFAULT_CONFIG_DIR, source: "bundled" });
    mkdirSync(join(home, ".config", "pda"));
  }, 60_000);

  it("PDA_CONFIG beats the project, --config beats PDA_CONFIG; a missing one exits 2 naming it", async () => {
    const env = { PDA_CONFIG: join(home, "elsewhere") };
    expect((await report(project, [], env)).config).toEqual({ dir: join(home, "elsewhere"), source: "env" });
    const flag = await report(project, ["--config", join(home, ".config", "pda")], env);
    expect(flag.config).toEqual({ dir: join(home, ".config", "pda"), source: "flag" });
    const missing = await pda(["config"], project, { PDA_CONFIG: join(home, "gone") });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`PDA_CONFIG: ${join(home, "gone")} does not exist`);
  }, 60_000);

  it("prints the folder, each file and the store with where each came from", async () => {
    const r = await pda(["config"], join(project, "src"));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`config  ${join(project, ".pda")}  (the project's .pda/ folder)`);
    expect(r.stdout).toMatch(/agents\.yaml .*\(the bundled defaults\)/);
    expect(r.stdout).toContain(`store   ${join(home, "pda.db")}  (--db)`);
  }, 60_000);
});
