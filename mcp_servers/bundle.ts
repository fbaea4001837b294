/**
 * Build step after tsc (`npm run build`): each bundled server becomes one file, written over the tsc output at
 * the same path (dist/mcp_servers/<id>/server.js), so the config, the tests and a tsc-only build (unbundled,
 * slower to start, same behaviour) all keep working. Why: resolving and compiling the ~300 modules of the MCP
 * SDK and zod cost each server ~0.3 CPU-s before it could answer `initialize`; one file costs a fraction (#16).
 *   node dist/mcp_servers/bundle.js [outdir]   (default: dist/ of this package)
 * Left out of the bundles, loaded from node_modules: native code (better-sqlite3) and the heavy libraries a
 * server imports at first use only (Rapier at the first robot episode, unpdf at the first PDF).
 */
import { rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";
import { PACKAGE_ROOT } from "../core/paths.js";

export const BUNDLED_SERVERS = ["math", "documents", "web", "robot"] as const;

// The SDK's Ajv validator (~200 KB) checks elicitation answers only, which the bundled servers never ask.
const AJV = "@modelcontextprotocol/server/validators/ajv";
const EXTERNAL = ["better-sqlite3", "@dimforge/rapier3d-compat", "unpdf", AJV];

/**
 * zod re-exports every translation of its error messages (`z.locales`, ~300 KB, a third of a bundle) though
 * only English, imported on its own, is used; the servers never touch `z.locales`, so it is left empty. The CLI's
 * bundle (cli/bundle.ts) leaves it out too.
 */
export const zodLocalesLeftOut: Plugin = {
  name: "zod-locales-left-out",
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]v4[\\/]/.test(args.importer) ? { path: "zod-locales", namespace: "empty" } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "empty" }, () => ({ contents: "export {};", loader: "js" }));
  },
};

/**
 * The SDK v2 server imports its default JSON Schema validator (Ajv, inlined: ~200 KB to parse and run at every
 * start) from its `_shims` entry. Here the shim builds it at first use, from node_modules (common/validator.ts
 * does the same for the servers' own lazyValidator).
 */
const ajvAtFirstUse: Plugin = {
  name: "mcp-ajv-at-first-use",
  setup(b) {
    b.onResolve({ filter: /^@modelcontextprotocol\/server\/_shims$/ }, () => ({
      path: "mcp-server-shims",
      namespace: "pda-shims",
    }));
    b.onLoad({ filter: /.*/, namespace: "pda-shims" }, () => ({
      loader: "js",
      contents: `import process from "node:process";
import { createRequire } from "node:module";
export class DefaultJsonSchemaValidator {
  #ajv;
  getValidator(schema) {
    this.#ajv ??= new (createRequire(import.meta.url)(${JSON.stringify(AJV)}).AjvJsonSchemaValidator)();
    return this.#ajv.getValidator(schema);
  }
}
export { process };`,
    }));
  },
};

/** esbuild's options for one CommonJS file for Node 20, with less text to parse (names kept: errors are told apart by class). */
/**
 * How every ES module bundle for Node is built (the servers, the CLI and the sandbox's thread): with source
 * maps, and minified in whitespace and syntax only, as there is less text to parse at every start, while the
 * names are kept, as errors are told apart by their class names.
 */
export const ESM_FOR_NODE = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  sourcemap: true,
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: "warning",
} as const;

export const CJS_FOR_NODE = {
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  minifyWhitespace: true,
  minifySyntax: true,
} as const;

const CHUNKS = "mcp_servers/chunks";

/** Bundle `servers` into `outdir` (dist/mcp_servers/<id>/server.js under it), replacing earlier chunks. */
export async function bundleServers(
  outdir: string = join(PACKAGE_ROOT, "dist"),
  servers: readonly string[] = BUNDLED_SERVERS,
): Promise<void> {
  rmSync(join(outdir, CHUNKS), { recursive: true, force: true });
  await build({
    absWorkingDir: PACKAGE_ROOT,
    entryPoints: servers.map((id) => `mcp_servers/${id}/server.ts`),
    outbase: ".",
    outdir,
    allowOverwrite: true,
    // What a server imports at first use (the HTTP transport, the robot's physics, the HTML worker's caller) goes
    // to a chunk of its own, with the node built-ins it needs: one file would load them all at start.
    splitting: true,
    chunkNames: `${CHUNKS}/[name]-[hash]`,
    ...ESM_FOR_NODE,
    external: EXTERNAL,
    plugins: [zodLocalesLeftOut, ajvAtFirstUse],
    // CommonJS dependencies call require(); an ES module has none unless given one.
    banner: {
      js: "import { createRequire as __pdaRequire } from 'node:module'; const require = __pdaRequire(import.meta.url);",
    },
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await bundleServers(process.argv[2] ? resolve(process.argv[2]) : undefined);
}
