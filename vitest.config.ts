import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The files that took longest in CI (seconds, 2026-11-28), started first so that the two workers finish
 * together: on a clean clone vitest knows no durations and starts the largest files first, which left one of
 * these running alone at the end. A file not listed keeps vitest's order, after these.
 */
const SLOWEST: Readonly<Record<string, number>> = {
  "tests/e2e/durable.test.ts": 162,
  "telemetry/otel.test.ts": 100,
  "tests/e2e/conformance.test.ts": 91,
  "performance/tests/queue.e2e.test.ts": 81,
  "performance/tests/batch.e2e.test.ts": 79,
  "mcp_servers/hub/tests/era-features.test.ts": 36,
  "cli/pipes.test.ts": 33,
  "cli/user-errors.test.ts": 33,
  "llm/llama.test.ts": 30,
  "ui/tests/robot.browser.test.ts": 30,
};

class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const seconds = (f: TestSpecification) => SLOWEST[relative(process.cwd(), f.moduleId)] ?? 0;
    // Array sort is stable: the files not listed keep vitest's own order.
    return (await super.sort(files)).sort((a, b) => seconds(b) - seconds(a));
  }
}

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
    // One module graph per worker, not one per file: importing pda's modules again for each file was a fifth of
    // the suite's CPU (the whole suite, same machine and hour: 1,220 CPU-s and 759 s against 1,553 and 887 s).
    // So a test file leaves no global state behind: what it sets in process.env, a timer, a module's setting.
    isolate: false,
    sequence: { sequencer: SlowestFirst },
  },
});
