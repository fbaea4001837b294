/**
 * Which modules a Node command loads: runs it with a loader hook (--import) that records every ES module URL
 * and, at exit, every CommonJS file in require.cache. For the start-up test (what `pda --help` pulls in) and
 * bench/startup.ts (module counts before/after).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

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
    const modules = readFileSync(out, "utf8")
      .split("\n")
      .filter((u) => u && !own.has(u));
    return { code, stdout, modules };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
