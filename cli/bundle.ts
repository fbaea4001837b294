/**
 * Build step after tsc (`npm run build`): the CLI entry (dist/main.js) becomes a bundle written over the tsc
 * output, with a chunk per dynamic import under dist/cli/chunks/, so a command still loads only its own code
 * (a tsc-only build is the unbundled CLI: slower to start, same behaviour). Why: resolving, reading and
 * compiling ~500 module files cost a scripted `pda run` more CPU than its work (#16).
 *   node dist/cli/bundle.js [outdir]   (default: dist/ of this package)
 * Only pda's own code and the libraries a run loads are bundled; every other package (the model SDKs, OTel,
 * the queue, the UI server, the prompts, native and WebAssembly code) is imported from node_modules at first
 * use as before. Ajv stays outside too: core/tool-args.ts requires it at the first tool call, from one file this
 * step packs (dist/core/ajv.cjs, as requiring Ajv's ~85 files cost 3x the CPU); so does yaml (dist/core/yaml.cjs),
 * required by config/load.ts only for a config text its parse cache does not hold. The sandbox's thread entry
 * (dist/action/worker.js) is bundled on its own, QuickJS's JavaScript included, as every engine's thread loads it.
 * dist/cli/chunks/inputs.json names the source files of each output, for testing/modules.ts.
 * Stack traces name pda's functions (identifiers are kept); `node --enable-source-maps` maps them to the source.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";
import { YAML_BUNDLE } from "../config/load.js";
import { AJV_BUNDLE, PACKAGE_ROOT } from "../core/index.js";
import { CJS_FOR_NODE, ESM_FOR_NODE, zodLocalesLeftOut } from "../mcp_servers/bundle.js";

export const CLI_CHUNKS = "cli/chunks";

/** The packages a scripted `pda run` loads (pure JS), bundled; any other bare import stays external. */
const BUNDLED = new Set([
  "@modelcontextprotocol/client",
  "@modelcontextprotocol/core",
  "@modelcontextprotocol/sdk",
  "acorn",
  "acorn-walk",
  "chalk",
  "commander",
  "cross-spawn",
  "env-paths",
  "eventsource",
  "eventsource-parser",
  "fast-deep-equal",
  "fast-uri",
  "fastest-levenshtein",
  "is-safe-filename",
  "isexe",
  "json-schema-traverse",
  "jsonrepair",
  "minisearch",
  "path-key",
  "pkce-challenge",
  "shebang-command",
  "shebang-regex",
  "strip-json-comments",
  "which",
  "zod",
]);

/** The package a bare specifier names: `zod/v4/core` → `zod`, `@scope/pkg/sub` → `@scope/pkg`. */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

const onlyBundled: Plugin = {
  name: "pda-bundled-packages-only",
  setup(b) {
    b.onResolve({ filter: /^[^./#]/ }, (args) => {
      if (args.path.startsWith("node:") || BUNDLED.has(packageOf(args.path))) return undefined;
      return { path: args.path, external: true };
    });
  },
};

/**
 * The SDK v2 client imports its default JSON Schema validator (a copy of Ajv inlined, ~200 KB to parse at every
 * start) from its `_shims` entry, though it validates only the results of tools that declare an output schema.
 * Here the shim builds it at first use, from node_modules (the bundled servers do the same).
 */
const clientAjvAtFirstUse: Plugin = {
  name: "mcp-client-ajv-at-first-use",
  setup(b) {
    b.onResolve({ filter: /^@modelcontextprotocol\/client\/_shims$/ }, () => ({
      path: "mcp-client-shims",
      namespace: "pda-shims",
    }));
    b.onLoad({ filter: /.*/, namespace: "pda-shims" }, () => ({
      loader: "js",
      contents: `import { createRequire } from "node:module";
export const CORS_IS_POSSIBLE = false;
export class DefaultJsonSchemaValidator {
  #ajv;
  getValidator(schema) {
    this.#ajv ??= new (createRequire(import.meta.url)("@modelcontextprotocol/client/validators/ajv").AjvJsonSchemaValidator)();
    return this.#ajv.getValidator(schema);
  }
}`,
    }));
  },
};

/**
 * A library required at first use as one CommonJS file under `outdir`: Ajv (both drafts core/tool-args.ts validates)
 * as `AJV_BUNDLE`, required at the first tool call, cost a scripted run ~25 ms of CPU instead of ~80 ms for Ajv's
 * own ~85 files; yaml as `YAML_BUNDLE`, required by config/load.ts only for a text its cache does not hold (#16).
 */
async function bundleCjs(outdir: string, file: string, contents: string): Promise<void> {
  await build({
    absWorkingDir: PACKAGE_ROOT,
    stdin: { contents, resolveDir: PACKAGE_ROOT, loader: "js" },
    outfile: join(outdir, file),
    ...CJS_FOR_NODE,
    logLevel: "warning",
  });
}

/** What every ES module output starts with: CommonJS dependencies call require(), which an ES module lacks. */
const REQUIRE_BANNER =
  "import { createRequire as __pdaRequire } from 'node:module'; const require = __pdaRequire(import.meta.url);";

/**
 * The sandbox's thread entry (action/worker.ts), with QuickJS's JavaScript, as one file written over its tsc
 * output (engine.ts starts dist/action/worker.js): each engine's thread then resolves, reads and links one module
 * instead of ~12, ~30 ms less CPU per thread start (#16). Returns the source files bundled, for inputs.json.
 */
async function bundleWorker(outdir: string): Promise<string[]> {
  const { metafile } = await build({
    absWorkingDir: PACKAGE_ROOT,
    entryPoints: ["action/worker.ts"],
    outfile: join(outdir, "action", "worker.js"),
    allowOverwrite: true,
    ...ESM_FOR_NODE,
    metafile: true,
    banner: { js: REQUIRE_BANNER },
  });
  return Object.keys(metafile.inputs);
}

/** Bundle main.ts into `outdir` (main.js and its chunks), replacing earlier chunks. */
export async function bundleCli(outdir: string = join(PACKAGE_ROOT, "dist")): Promise<void> {
  rmSync(join(outdir, CLI_CHUNKS), { recursive: true, force: true });
  const { metafile } = await build({
    absWorkingDir: PACKAGE_ROOT,
    entryPoints: ["main.ts"],
    outbase: ".",
    outdir,
    allowOverwrite: true,
    splitting: true,
    chunkNames: `${CLI_CHUNKS}/[name]-[hash]`,
    ...ESM_FOR_NODE,
    metafile: true,
    // zod's translations of its messages (~200 KB of the zod chunk): pda never reads `z.locales`.
    plugins: [clientAjvAtFirstUse, zodLocalesLeftOut, onlyBundled],
    banner: { js: REQUIRE_BANNER },
  });
  const inputs: Record<string, string[]> = {};
  for (const [out, o] of Object.entries(metafile.outputs)) {
    if (!out.endsWith(".js")) continue;
    inputs[relative(outdir, resolve(PACKAGE_ROOT, out))] = Object.keys(o.inputs);
  }
  inputs["action/worker.js"] = await bundleWorker(outdir);
  await bundleCjs(
    outdir,
    AJV_BUNDLE,
    `module.exports = { Ajv: require("ajv").Ajv, Ajv2020: require("ajv/dist/2020.js").Ajv2020 };`,
  );
  await bundleCjs(outdir, YAML_BUNDLE, `module.exports = require("yaml");`);
  mkdirSync(join(outdir, CLI_CHUNKS), { recursive: true });
  writeFileSync(join(outdir, CLI_CHUNKS, "inputs.json"), JSON.stringify(inputs));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await bundleCli(process.argv[2] ? resolve(process.argv[2]) : undefined);
}
