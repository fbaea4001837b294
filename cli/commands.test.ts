/**
 * The command table against the command modules, and what each command loads: `pda --help` and `--version` are
 * answered from the table without loading any group, and a command loads no model SDK it does not use.
 * Run `npx tsc -p tsconfig.json` first (the module tests spawn dist/main.js).
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../core/index.js";
import { loadedModules } from "../testing/modules.js";
import { cliFolder } from "./harness.js";
import { COMMANDS, addPlaceholders, baseProgram, commandName } from "./commands/index.js";

const MAIN = join(PACKAGE_ROOT, "dist", "main.js");

function listing(program: Command): Array<[string, string, string]> {
  const help = program.createHelp();
  return program.commands.map((c) => [c.name(), help.subcommandTerm(c), c.description()]);
}

describe("the command table", () => {
  it("names each command with the help term and description its module registers", async () => {
    for (const { name, term, description, load } of COMMANDS) {
      const real = baseProgram();
      (await load())(real);
      expect(listing(real)).toEqual([[name, term, description]]);
    }
  });

  it("lists the commands in `pda --help` as their modules would", async () => {
    const full = baseProgram();
    for (const { load } of COMMANDS) (await load())(full);
    const light = addPlaceholders(baseProgram());
    expect(light.helpInformation()).toBe(full.helpInformation());
  });

  it("finds the command word after global options, and the command of `help <command>`", () => {
    expect(commandName(["--config", "x", "--verbose", "run", "q"])).toBe("run");
    expect(commandName(["--db", "d.db", "help", "tools"])).toBe("tools");
    expect(commandName(["--version"])).toBeUndefined();
  });
});

/** Loaded module URLs that contain any of `parts`. */
const matching = (modules: string[], parts: string[]) =>
  modules.filter((m) => parts.some((p) => m.includes(p)));

const HEAVY = [
  "/node_modules/@google/genai/",
  "/node_modules/node-llama-cpp/",
  "/node_modules/@inquirer/",
  "/node_modules/cli-progress/",
  "/node_modules/ajv/",
  "/node_modules/@modelcontextprotocol/",
  "/node_modules/zod/",
  "/dist/cli/run.js",
  "/dist/cli/commands/run.js",
];

describe("what a command loads", () => {
  it("`pda --version` and `pda --help` load no command group, model SDK, MCP SDK or schema library", async () => {
    for (const args of [["--version"], ["--help"]]) {
      const r = await loadedModules([MAIN, ...args], { cwd: PACKAGE_ROOT });
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(args[0] === "--version" ? /^\d+\.\d+\.\d+/ : /Usage: pda/);
      expect(matching(r.modules, HEAVY)).toEqual([]);
    }
  });

  it("`pda models` loads no model SDK, prompt library or progress bar", async () => {
    const r = await loadedModules([MAIN, "models", "--json"], {
      cwd: PACKAGE_ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: PACKAGE_ROOT,
        // The parsed models.yaml is cached (config/load.ts): not in the package folder, which is HOME here.
        PDA_CACHE_DIR: join(tmpdir(), "pda-models-test-yaml-cache"),
        GEMINI_API_KEY: "k-not-a-real-key",
      },
    });
    expect(r.code).toBe(0);
    expect(matching(r.modules, HEAVY.slice(0, 5))).toEqual([]);
  });

  it("the scripted demo run loads neither undici (no proxy set) nor the v1 MCP SDK client (no login)", async () => {
    const cli = cliFolder("pda-run-modules-");
    try {
      const run = () =>
        loadedModules(
          [
            MAIN,
            ...["--config", cli.config, "--db", join(cli.dir, "pda.db"), "run", "What is 32 + 5 - 3 * 2"],
            ...["--model", `scripted:${join(PACKAGE_ROOT, "config", "demo", "calculator.yaml")}`, "--json"],
          ],
          { cwd: cli.dir, env: { PATH: process.env.PATH, HOME: cli.dir, NO_COLOR: "1" } },
        );
      const r = await run();
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ status: "succeeded", tool_calls: 3 });
      // The run did its work: the hub's client (SDK v2) and the store were loaded.
      expect(matching(r.modules, ["/node_modules/@modelcontextprotocol/client/"])).not.toEqual([]);
      expect(matching(r.modules, ["/node_modules/better-sqlite3/"])).not.toEqual([]);
      expect(
        matching(r.modules, [
          "/node_modules/undici/",
          "/node_modules/@modelcontextprotocol/sdk/dist/esm/client/",
          "/node_modules/zod-to-json-schema/",
          // The math tools' flat schemas accept the calls without Ajv (core/tool-args.ts): neither its files
          // nor the build's one-file copy (cli/bundle.ts) is loaded.
          "/node_modules/ajv/",
          "/dist/core/ajv.cjs",
          // The config files were parsed with the build's one-file yaml, not the package's files.
          "/node_modules/yaml/",
        ]),
      ).toEqual([]);
      expect(matching(r.modules, ["/dist/core/yaml.cjs"])).not.toEqual([]);
      // The second run reads the parsed config and script from the cache (config/load.ts): no yaml at all.
      const again = await run();
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({ status: "succeeded", tool_calls: 3 });
      expect(
        matching(again.modules, ["/dist/core/yaml.cjs", "/node_modules/yaml/", "/dist/core/ajv.cjs"]),
      ).toEqual([]);
    } finally {
      cli.close();
    }
  });

  it("the scripted demo run leaves the sandbox's WebAssembly on its baseline code (no TurboFan tier-up)", async () => {
    const cli = cliFolder("pda-run-tiering-");
    try {
      // V8 names each WebAssembly function it compiles, and with which compiler, on stdout.
      const out = await new Promise<string>((resolve, reject) =>
        execFile(
          process.execPath,
          [
            "--trace-wasm-compilation-times",
            MAIN,
            ...["--config", cli.config, "--db", join(cli.dir, "pda.db"), "run", "What is 32 + 5 - 3 * 2"],
            ...["--model", `scripted:${join(PACKAGE_ROOT, "config", "demo", "calculator.yaml")}`],
          ],
          {
            cwd: cli.dir,
            env: { PATH: process.env.PATH, HOME: cli.dir, NO_COLOR: "1" },
            maxBuffer: 64 << 20,
          },
          (err, stdout) => (err ? reject(err) : resolve(stdout)),
        ),
      );
      expect(out).toContain("32 + 5 - 3 * 2 = 31");
      expect(out).toMatch(/using Liftoff/);
      expect(out).not.toMatch(/using TurboFan/);
    } finally {
      cli.close();
    }
  });

  it("the sandbox's thread entry is one file the build packs (cli/bundle.ts): it imports only built-ins", () => {
    const worker = readFileSync(join(PACKAGE_ROOT, "dist", "action", "worker.js"), "utf8");
    const imported = [...worker.matchAll(/\bfrom\s*["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']/g)].map(
      (m) => m[1] ?? m[2],
    );
    expect(imported).toContain("node:worker_threads");
    expect(imported.filter((s) => !s!.startsWith("node:"))).toEqual([]);
  });

  it("`pda robot tasks` loads neither the agent runtime nor the progress bar (they are for `robot bench`)", async () => {
    const r = await loadedModules([MAIN, "robot", "tasks", "--json"], { cwd: PACKAGE_ROOT });
    expect(r.code).toBe(0);
    expect(
      matching(r.modules, ["/dist/cli/runtime.js", "/dist/agent/loop.js", "/node_modules/cli-progress/"]),
    ).toEqual([]);
  });
});
