import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["**/*.test.ts"],
    exclude: ["node_modules/**", "dist/**"],
    // Fails a test whose scripted model was not played exactly (unplayed turns, calls past the script).
    setupFiles: ["tests/script-audit.ts"],
    // Refuses a dist/ older than its source: the tests that spawn pda would run old code.
    globalSetup: ["tests/dist-fresh.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests spawn real MCP servers and child processes; two cores.
    pool: "forks",
    maxWorkers: 2,
  },
});
