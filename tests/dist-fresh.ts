/**
 * vitest globalSetup: refuses to run on a stale dist/. Tests import the source, but many spawn `pda` and the
 * MCP servers as children from dist/ (the way a user runs them); a dist/ older than its source would test old
 * code without a word. Refusing (not rebuilding) keeps a run's cost plain: `npm test` builds first.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const ROOT = join(import.meta.dirname, "..");

/** The files tsconfig.json compiles: its `include` entries (`main.ts`, `<folder>/**\/*.ts`) less its excludes. */
function sources(): string[] {
  const { include } = JSON.parse(readFileSync(join(ROOT, "tsconfig.json"), "utf8")) as { include: string[] };
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") && !e.name.endsWith(".d.ts"))
        out.push(path);
    }
  };
  for (const entry of include) {
    if (entry.endsWith("/**/*.ts")) walk(join(ROOT, entry.slice(0, -"/**/*.ts".length)));
    else out.push(join(ROOT, entry));
  }
  return out.map((f) => relative(ROOT, f));
}

const mtime = (file: string) => statSync(file, { throwIfNoEntry: false })?.mtimeMs;

export default function setup(): void {
  const stale = sources().filter((f) => {
    const built = mtime(join(ROOT, "dist", f.replace(/\.ts$/, ".js")));
    return built === undefined || built < mtime(join(ROOT, f))!;
  });
  if (stale.length) {
    throw new Error(
      `dist/ is older than its source (${stale.length} file${stale.length > 1 ? "s" : ""}, e.g. ` +
        `${stale.slice(0, 5).join(", ")}): the tests that spawn pda would run old code. ` +
        `Build first: npx tsc -p tsconfig.json (npm test does).`,
    );
  }
}
