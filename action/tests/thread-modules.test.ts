import { writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { PACKAGE_ROOT, distPath } from "../../core/index.js";
import { loadedModules } from "../../testing/modules.js";

describe("the sandbox's worker thread", () => {
  // Every engine is a thread that loads these modules; core/ (zod and every schema) cost each thread ~120 ms of
  // CPU and several MB, more than its QuickJS engine, and a batch starts one thread per concurrent step.
  it("loads neither core/ nor zod, only QuickJS and the step's own modules", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pda-thread-modules-"));
    try {
      // What worker.ts imports, without starting a thread (it needs the host's workerData).
      const script = join(dir, "load.mjs");
      writeFileSync(
        script,
        ["vm.js", "errors.js", "protocol.js", "fast.js", "prelude.js"]
          .map((f) => `import ${JSON.stringify(pathToFileURL(distPath(`action/${f}`)).href)};`)
          .join("\n"),
      );
      const r = await loadedModules([script], { cwd: PACKAGE_ROOT });
      expect(r.code).toBe(0);
      expect(r.modules.some((u) => u.includes("/dist/action/vm.js"))).toBe(true);
      expect(r.modules.filter((u) => /\/dist\/core\/|\/node_modules\/zod\//.test(u))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
