/**
 * Build step after bundle.ts (`npm run build`): a start-up snapshot of each bundled server (hub/snapshot.ts says
 * when one is used). Each server's code is bundled once more, as CommonJS (Node builds snapshots from a single
 * CommonJS file), into dist/mcp_servers/snapshots/<id>.cjs; `node --build-snapshot` runs it (its modules load,
 * zod and the MCP SDK build their schemas) and saves the heap as <id>.blob; manifest.json says what each blob
 * was built from. A server whose blob cannot be built starts from its bundle, as before: the build goes on.
 *   node dist/mcp_servers/snapshot-build.js    (PDA_SNAPSHOTS=0: build none)
 *
 * What a snapshot must not hold, and how this build keeps it out:
 *   - native code and libraries loaded at first use (Rapier, unpdf, Ajv): a stand-in loads the real module at its
 *     first use, after the snapshot was taken (`atFirstUse`); better-sqlite3's JavaScript is in the snapshot,
 *     and its native part is loaded at the first database opened (`sqliteAddon`);
 *   - the process it runs in: a server reads its arguments, environment and stdio only in `main`, which runs at
 *     each start (setDeserializeMainFunction), never at build time.
 */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { mkdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";
import { PACKAGE_ROOT } from "../core/paths.js";
import { BUNDLED_SERVERS, CJS_FOR_NODE, zodLocalesLeftOut } from "./bundle.js";
import { SNAPSHOT_DIR, SNAPSHOT_MANIFEST, type SnapshotManifest } from "./hub/index.js";

/**
 * What the servers import but a snapshot cannot hold, each loaded at its first use instead: native code, what
 * they load lazily anyway, node:http(s), which Node 20 cannot load while it builds a snapshot, and
 * node:worker_threads, whose workers fail (process.cwd) when it was loaded before the snapshot was taken.
 */
const AT_FIRST_USE = [
  "node:http",
  "node:https",
  "node:worker_threads",
  "@dimforge/rapier3d-compat",
  "unpdf",
  "@modelcontextprotocol/server/validators/ajv",
];

/**
 * A stand-in for a module loaded at first use: any use of it (a property, `new`, a call) requires the real one
 * from node_modules. The bundle's import helpers copy a module's export names when it is imported, so the
 * stand-in lists them (read here, at build time) without loading it; `__esModule` is answered the same way.
 */
const atFirstUse: Plugin = {
  name: "snapshot-at-first-use",
  setup(b) {
    const names = new RegExp(`^(${AT_FIRST_USE.map((n) => n.replace(/[/.]/g, "\\$&")).join("|")})$`);
    const req = createRequire(join(PACKAGE_ROOT, "package.json"));
    b.onResolve({ filter: names }, (args) => ({ path: args.path, namespace: "at-first-use" }));
    b.onLoad({ filter: /.*/, namespace: "at-first-use" }, (args) => {
      const exported = Object.keys(req(args.path) as object).filter((k) => k !== "__esModule");
      return {
        loader: "js",
        contents: `const names = ${JSON.stringify(exported)};
let mod;
const load = () => (mod ??= require("node:module").createRequire(__pdaFile)(${JSON.stringify(args.path)}));
const target = function () {};
module.exports = new Proxy(target, {
  get: (_t, k) => (k === "__esModule" ? false : load()[k]),
  has: (_t, k) => k in load(),
  construct: (_t, a) => new (load())(...a),
  apply: (_t, self, a) => load().apply(self, a),
  ownKeys: () => [...new Set([...Reflect.ownKeys(target), ...names])],
  getOwnPropertyDescriptor: (_t, k) =>
    Reflect.getOwnPropertyDescriptor(target, k) ??
    (names.includes(k) ? { configurable: true, enumerable: true, get: () => load()[k] } : undefined),
});`,
      };
    });
  },
};

/**
 * better-sqlite3 loads its native part at the first database opened, through `bindings`, which finds the file
 * from its caller's path: in a bundle, the addon is named here instead, and loaded after the snapshot was taken.
 */
const sqliteAddon: Plugin = {
  name: "snapshot-sqlite-addon",
  setup(b) {
    b.onResolve({ filter: /^bindings$/ }, (args) =>
      /[\\/]better-sqlite3[\\/]/.test(args.importer)
        ? { path: "bindings", namespace: "sqlite-addon" }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "sqlite-addon" }, () => ({
      loader: "js",
      contents: `module.exports = (name) =>
  require("node:module").createRequire(__pdaFile)("better-sqlite3/build/Release/" + name);`,
    }));
  },
};

/** The snapshot's entry for server `id`: its modules, the SDK's schemas built now, and its main run at start. */
const entries: Plugin = {
  name: "snapshot-entry",
  setup(b) {
    b.onResolve({ filter: /^snapshot-entry:/ }, (args) => ({
      path: args.path.slice("snapshot-entry:".length),
      namespace: "snapshot-entry",
    }));
    b.onLoad({ filter: /.*/, namespace: "snapshot-entry" }, (args) => ({
      loader: "ts",
      resolveDir: PACKAGE_ROOT,
      contents: `import "./core/zod-config.ts";
import { startupSnapshot } from "node:v8";
import { preloadSchemas } from "@modelcontextprotocol/server";
import { main } from "./mcp_servers/${args.path}/server.ts";
// Built lazily by the SDK at the first message: here, once, into the snapshot.
preloadSchemas();
startupSnapshot.setDeserializeMainFunction(() => void main());`,
    }));
  },
};

/** Bundles each server's snapshot entry into `dir`/<id>.cjs. */
async function bundle(dir: string, servers: readonly string[]): Promise<void> {
  await build({
    absWorkingDir: PACKAGE_ROOT,
    entryPoints: servers.map((id) => ({ in: `snapshot-entry:${id}`, out: id })),
    outdir: dir,
    outExtension: { ".js": ".cjs" },
    ...CJS_FOR_NODE,
    logLevel: "error",
    plugins: [entries, atFirstUse, sqliteAddon, zodLocalesLeftOut],
    // Not the file's own URL: each server runs its main only when it is the program (argv[1]), which must not
    // happen while the snapshot is built. Resolving from here finds node_modules as the bundles do.
    define: { "import.meta.url": "__pdaUrl" },
    banner: {
      js: `var __pdaFile = __filename + ".snapshot", __pdaUrl = require("node:url").pathToFileURL(__pdaFile).href;`,
    },
  });
}

/** Runs `node --build-snapshot` on one bundle; resolves with what it printed when it failed. */
function snapshot(cjs: string, blob: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const env = { ...process.env };
    delete env.NODE_OPTIONS; // its V8 flags would be built into the blob, and every start would need them
    const child = spawn(process.execPath, ["--snapshot-blob", blob, "--build-snapshot", cjs], {
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", (e) => resolve(e.message));
    child.on("exit", (code, signal) => {
      if (code === 0) return resolve(undefined);
      // Node's warnings about built-ins in a snapshot are not the failure.
      const why = err
        .split("\n")
        .filter(
          (l) => l && !/verified whether built-in module|may still work|issue tracker|trace-warnings/.test(l),
        )
        .slice(-3)
        .join(" | ");
      resolve(`${signal ? `killed by ${signal}` : `exit code ${code}`}${why ? `: ${why}` : ""}`);
    });
  });
}

/** Builds the snapshots of `servers` under `distDir`; returns the manifest written (none if none was built). */
export async function buildSnapshots(
  distDir: string = join(PACKAGE_ROOT, "dist"),
  servers: readonly string[] = BUNDLED_SERVERS,
): Promise<SnapshotManifest | undefined> {
  const dir = join(distDir, SNAPSHOT_DIR);
  rmSync(dir, { recursive: true, force: true });
  if (process.env.PDA_SNAPSHOTS === "0") return undefined;
  mkdirSync(dir, { recursive: true });
  await bundle(dir, servers);
  const manifest: SnapshotManifest = {
    format: 1,
    node: process.version,
    arch: process.arch,
    root: PACKAGE_ROOT,
    servers: {},
  };
  // Two at a time: each is one busy thread for about a second.
  const queue = [...servers];
  const work = async () => {
    for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
      const blob = `${id}.blob`;
      const failed = await snapshot(join(dir, `${id}.cjs`), join(dir, `${blob}.tmp`));
      if (failed) {
        rmSync(join(dir, `${blob}.tmp`), { force: true });
        process.stderr.write(
          `pda build: no start-up snapshot for the ${id} server (${failed}); it starts from its bundle\n`,
        );
        continue;
      }
      renameSync(join(dir, `${blob}.tmp`), join(dir, blob));
      const bundleStat = statSync(join(distDir, `mcp_servers/${id}/server.js`));
      manifest.servers[id] = {
        blob,
        blob_bytes: statSync(join(dir, blob)).size,
        bundle_bytes: bundleStat.size,
        bundle_mtime_ms: bundleStat.mtimeMs,
      };
    }
  };
  await Promise.all([work(), work()]);
  if (Object.keys(manifest.servers).length === 0) return undefined;
  writeFileSync(join(dir, SNAPSHOT_MANIFEST), JSON.stringify(manifest, null, 2) + "\n");
  return manifest;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildSnapshots();
}
