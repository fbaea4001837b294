/**
 * Which modules a Node command loads: runs it with a loader hook (--import) that records every ES module URL
 * and, at exit, every CommonJS file in require.cache. For the start-up test (what `pda --help` pulls in) and
 * bench/startup.ts (module counts before/after). A bundled CLI (cli/bundle.ts) loads a few chunk files; each is
 * listed as the source files bundled into it (dist/cli/chunks/inputs.json), named as the unbundled build would
 * load them, so the same checks hold for both builds.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HOOKS = `let port;
export function initialize(data) { port = data.port; }
export async function load(url, context, next) { port.postMessage(url); return next(url, context); }
`;

const REGISTER = `import { register, createRequire } from "node:module";
import { MessageChannel } from "node:worker_threads";
import { writeFileSync } from "node:fs";
const require = createRequire(import.meta.url);
const { port1, port2 } = new MessageChannel();
const urls = new Set();
port1.on("message", (u) => urls.add(u));
port1.unref();
register("./hooks.mjs", { parentURL: import.meta.url, data: { port: port2 }, transferList: [port2] });
process.on("exit", () => {
  for (const k of Object.keys(require.cache)) urls.add("file://" + k);
  writeFileSync(process.env.PDA_MODULE_LIST, [...urls].join("\\n"));
});
`;

export interface ModuleList {
  /** Exit code of the command. */
  code: number;
  stdout: string;
  /** URLs of the modules loaded (node: built-ins included), without the hook's own. */
  modules: string[];
}

/**
 * The URLs of the source files in a bundle output (`file:///<root>/dist/<output>`) as the unbundled build
 * names them: `cli/run.ts` as dist/cli/run.js, a package file where it lies; `url` itself when not an output.
 */
function unbundled(url: string, manifests: Map<string, Record<string, string[]> | null>): string[] {
  const m = /^(file:\/\/.*)\/dist\/(.+)$/.exec(url);
  if (!m) return [url];
  const root = fileURLToPath(m[1]!);
  if (!manifests.has(root)) {
    const file = join(root, "dist", "cli", "chunks", "inputs.json");
    manifests.set(
      root,
      existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Record<string, string[]>) : null,
    );
  }
  const inputs = manifests.get(root)?.[m[2]!];
  if (!inputs) return [url];
  return inputs.map(
    (i) =>
      pathToFileURL(
        i.includes("node_modules/") ? resolve(root, i) : join(root, "dist", i.replace(/\.ts$/, ".js")),
      ).href,
  );
}

/** Run `node <args>` and list the modules it loaded. */
export async function loadedModules(
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<ModuleList> {
  const dir = mkdtempSync(join(tmpdir(), "pda-modules-"));
  try {
    writeFileSync(join(dir, "hooks.mjs"), HOOKS);
    writeFileSync(join(dir, "register.mjs"), REGISTER);
    const out = join(dir, "modules.txt");
    const register = pathToFileURL(join(dir, "register.mjs")).href;
    const { code, stdout } = await new Promise<{ code: number; stdout: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        ["--import", register, ...args],
        { cwd: opts.cwd, env: { ...(opts.env ?? process.env), PDA_MODULE_LIST: out }, timeout: 120_000 },
        (err, stdout) => resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout }),
      );
      child.stdin?.end();
    });
    const own = new Set([register, pathToFileURL(join(dir, "hooks.mjs")).href]);
    const manifests = new Map<string, Record<string, string[]> | null>();
    const modules = readFileSync(out, "utf8")
      .split("\n")
      .filter((u) => u && !own.has(u))
      .flatMap((u) => unbundled(u, manifests));
    return { code, stdout, modules };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
