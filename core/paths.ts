import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import envPaths from "env-paths";

/**
 * The package root (the folder holding package.json), found from this file whether it runs from source
 * (core/paths.ts) or compiled (dist/core/paths.js). Prompts, config and samples are read from here.
 */
export const PACKAGE_ROOT: string = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    if (existsSync(join(dir, "package.json")) && existsSync(join(dir, "prompts"))) return dir;
    dir = dirname(dir);
  }
  throw new Error("pda: cannot find the package root (package.json beside prompts/)");
})();

export const DEFAULT_CONFIG_DIR = join(PACKAGE_ROOT, "config");
export const PROMPTS_DIR = join(PACKAGE_ROOT, "prompts");

/** The user's data directory for the default database (XDG on Linux). */
export function defaultDbPath(): string {
  return join(envPaths("pda", { suffix: "" }).data, "pda.db");
}

/** Compiled JS of a bundled module, e.g. distPath("mcp_servers/math/server.js"). */
export function distPath(rel: string): string {
  return join(PACKAGE_ROOT, "dist", rel);
}
