/**
 * pda as a library, the way a user gets it: `npm pack`, the tarball unpacked into a separate project's
 * node_modules, `import { runQuery } from "pda"` by name, and a session run with the scripted model against
 * the bundled math server. (Dependencies come from this checkout's node_modules: no registry is needed.)
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG_DIR, PACKAGE_ROOT } from "../core/index.js";

let dir: string;
let installed: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-package-"));
  // --ignore-scripts: dist/ is built already (the suite refuses a stale one); pack must not rebuild it.
  execFileSync("npm", ["pack", "--ignore-scripts", "--pack-destination", dir], {
    cwd: PACKAGE_ROOT,
    stdio: "ignore",
  });
  const tgz = readdirSync(dir).find((f) => f.endsWith(".tgz"))!;
  const app = join(dir, "app");
  installed = join(app, "node_modules", "pda");
  mkdirSync(installed, { recursive: true });
  execFileSync("tar", ["xzf", join(dir, tgz), "-C", installed, "--strip-components=1"]);
  symlinkSync(join(PACKAGE_ROOT, "node_modules"), join(installed, "node_modules"), "dir");
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", type: "module", private: true }));
}, 180_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the packed package", () => {
  it("ships its entry, its types and its config, and exports them by name", () => {
    for (const f of ["dist/lib.js", "dist/lib.d.ts", "dist/main.js", "config/models.yaml", "prompts"]) {
      expect(existsSync(join(installed, f)), f).toBe(true);
    }
  });

  it('`import { runQuery } from "pda"` runs a session with the scripted model in another project', () => {
    const app = join(dir, "app");
    writeFileSync(
      join(app, "main.mjs"),
      `import { runQuery, openStore, createAgent, MultiMCP, createChannel, createModels } from "pda";
const db = ${JSON.stringify(join(dir, "pda.db"))};
for (const [name, f] of Object.entries({ createAgent, MultiMCP, createChannel, createModels }))
  if (typeof f !== "function") throw new Error(name + " is not exported");
const s = await runQuery("What is 32 + 5 - 3 * 2", {
  model: ${JSON.stringify(`scripted:${join(DEFAULT_CONFIG_DIR, "demo", "calculator.yaml")}`)},
  db,
});
const store = openStore(db);
const logged = store.getSession(s.session_id);
store.close();
console.log(JSON.stringify({ status: s.status, answer: s.state.final_answer, logged: logged.status }));
`,
    );
    const out = execFileSync(process.execPath, ["main.mjs"], {
      cwd: app,
      env: { PATH: process.env.PATH ?? "", HOME: dir, NO_COLOR: "1" },
      encoding: "utf8",
      timeout: 90_000,
    });
    expect(JSON.parse(out.trim().split("\n").pop()!)).toEqual({
      status: "succeeded",
      answer: "32 + 5 - 3 * 2 = 31",
      logged: "succeeded",
    });
  }, 120_000);
});
