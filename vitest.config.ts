import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["**/*.test.ts"],
    exclude: ["node_modules/**", "dist/**"],
    // Fails a test whose scripted model was not played exactly (unplayed turns, calls past the script).
    setupFiles: ["tests/script-audit.ts"],
    // Refuses a dist/ older than its source: the tests that spawn pda would run old code.
    globalSetup: ["tests/dist-fresh.ts"],
    // The parsed-YAML cache (config/load.ts) of this run's processes, not the user's own.
    env: { PDA_CACHE_DIR: mkdtempSync(join(tmpdir(), "pda-test-cache-")) },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests spawn real MCP servers and child processes; two cores.
    pool: "forks",
    maxWorkers: 2,
  },
});
