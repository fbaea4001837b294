/** `pda config`: which config folder and files pda uses, and where each came from; the store's path too. */
import chalk from "chalk";
import type { Command } from "commander";
import { DEFAULT_CONFIG_DIR, defaultDbPath } from "../../core/index.js";
import { configFile, configSource, userConfigDir, type ConfigSource } from "../../config/index.js";
import { runCommand } from "../context.js";
import { hubConfigFile } from "../hub.js";

const FILES = ["profiles.yaml", "models.yaml", "agents.yaml", "mcp_server_config.yaml"];

const SOURCE_TEXT: Record<ConfigSource, string> = {
  flag: "--config",
  env: "PDA_CONFIG",
  project: "the project's .pda/ folder",
  user: "the user's config folder",
  bundled: "the bundled defaults",
};

/** What `pda config` reports, also as JSON. */
export function configReport(opts: { config?: string; db?: string }) {
  const { dir, source } = configSource(opts.config);
  const files = FILES.map((name) => {
    const path = name === "mcp_server_config.yaml" ? hubConfigFile(opts.config) : configFile(dir, name);
    // A folder may hold only some files; the others are the bundled ones.
    const from: ConfigSource =
      path.startsWith(DEFAULT_CONFIG_DIR) && source !== "bundled" ? "bundled" : source;
    return { name, path, source: from };
  });
  const store = opts.db
    ? { path: opts.db, source: "--db" }
    : process.env.PDA_DB
      ? { path: process.env.PDA_DB, source: "PDA_DB" }
      : { path: defaultDbPath(), source: "default" };
  const search = [
    "--config",
    "PDA_CONFIG",
    ".pda/ in the working folder or a parent",
    userConfigDir(),
    DEFAULT_CONFIG_DIR,
  ];
  return { config: { dir, source }, files, store, search };
}

export function register(program: Command): void {
  program
    .command("config")
    .description("where pda's config comes from: the folder and each file used, and the session store")
    .option("--json", "print the report as JSON")
    .addHelpText(
      "after",
      `
The config folder is the first of: --config, PDA_CONFIG, the nearest .pda/ folder from the working folder
up, the user's config folder (${userConfigDir()}), the bundled config/. A file the folder does not hold
comes from the bundled config/.`,
    )
    .action((opts: { json?: boolean }, cmd: Command) =>
      runCommand(async () => {
        const report = configReport(cmd.optsWithGlobals<{ config?: string; db?: string }>());
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
          return 0;
        }
        const out = [
          `${chalk.bold("config")}  ${report.config.dir}  ${chalk.dim(`(${SOURCE_TEXT[report.config.source]})`)}`,
          ...report.files.map(
            (f) => `  ${f.name.padEnd(24)} ${f.path}  ${chalk.dim(`(${SOURCE_TEXT[f.source]})`)}`,
          ),
          `${chalk.bold("store")}   ${report.store.path}  ${chalk.dim(`(${report.store.source})`)}`,
          chalk.dim(`searched in order: ${report.search.join(", ")}`),
        ];
        process.stdout.write(`${out.join("\n")}\n`);
        return 0;
      }),
    );
}
