/**
 * Start-up snapshots of the bundled servers (#16). `npm run build` runs each bundled server's module code once
 * and saves the heap that results (Node's `--build-snapshot`, snapshot-build.ts); a server started from its blob
 * skips loading, compiling and running that code, and answers `initialize` for about half the CPU.
 *
 * A blob only fits the Node binary, V8 flags and package folder it was built with, so it is used only when
 * all of these hold: the manifest names this Node version and arch and this package folder; the server is a
 * bundled one started with `node` (spawned as this very Node binary); its bundle is the one the blob was built
 * from (size and mtime); no NODE_OPTIONS reaches it (V8 refuses a blob under other flags: exit code 14); and
 * PDA_SNAPSHOTS is not 0. Otherwise the server starts from its bundle, as without snapshots.
 */
import { readFileSync, statSync } from "node:fs";
import { basename, isAbsolute, join, resolve } from "node:path";
import { z } from "zod";
import { distPath, PACKAGE_ROOT } from "../../core/paths.js";

export const SNAPSHOT_DIR = "mcp_servers/snapshots";
export const SNAPSHOT_MANIFEST = "manifest.json";

/** What one blob was built from, to tell a blob that no longer fits its bundle. */
const Built = z.object({
  blob: z.string(),
  blob_bytes: z.number().int(),
  bundle_bytes: z.number().int(),
  bundle_mtime_ms: z.number(),
});

export const SnapshotManifest = z.object({
  format: z.literal(1),
  node: z.string(),
  arch: z.string(),
  root: z.string(),
  servers: z.record(z.string(), Built),
});
export type SnapshotManifest = z.infer<typeof SnapshotManifest>;

/** The command that starts a server. */
export interface Launch {
  command: string;
  args: string[];
}

let manifest: SnapshotManifest | null | undefined;

function readManifest(): SnapshotManifest | null {
  if (manifest !== undefined) return manifest;
  try {
    const m = SnapshotManifest.parse(
      JSON.parse(readFileSync(distPath(join(SNAPSHOT_DIR, SNAPSHOT_MANIFEST)), "utf8")),
    );
    manifest = m.node === process.version && m.arch === process.arch && m.root === PACKAGE_ROOT ? m : null;
  } catch {
    manifest = null; // none built (a tsc-only build, PDA_SNAPSHOTS=0 at build): the bundles start as ever
  }
  return manifest;
}

/**
 * The snapshot start of a configured stdio server, or undefined when it has none that fits. `env` is the
 * environment the server gets; `cwd` the folder its relative arguments are resolved against.
 */
export function snapshotLaunch(
  launch: Launch,
  env: Record<string, string | undefined>,
  cwd: string | undefined,
): Launch | undefined {
  if (process.env.PDA_SNAPSHOTS === "0" || env.PDA_SNAPSHOTS === "0" || env.NODE_OPTIONS) return undefined;
  const command = launch.command;
  if (command !== process.execPath && !/^node(\.exe)?$/.test(basename(command))) return undefined;
  // A named binary elsewhere may be another Node: only this one's blob fits.
  if (isAbsolute(command) && command !== process.execPath) return undefined;
  const script = launch.args[0];
  if (!script) return undefined;
  const m = readManifest();
  if (!m) return undefined;
  const path = isAbsolute(script) ? script : resolve(cwd ?? process.cwd(), script);
  for (const [id, built] of Object.entries(m.servers)) {
    if (path !== distPath(`mcp_servers/${id}/server.js`)) continue;
    try {
      const bundle = statSync(path);
      const blob = distPath(join(SNAPSHOT_DIR, built.blob));
      if (bundle.size !== built.bundle_bytes || bundle.mtimeMs !== built.bundle_mtime_ms) return undefined;
      if (statSync(blob).size !== built.blob_bytes) return undefined;
      // The script stays argv[1], so the server reads its own arguments where it always does.
      return { command: process.execPath, args: ["--snapshot-blob", blob, path, ...launch.args.slice(1)] };
    } catch {
      return undefined;
    }
  }
  return undefined;
}
