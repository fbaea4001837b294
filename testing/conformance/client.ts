#!/usr/bin/env node
/**
 * The client under test for the conformance suite's client scenarios: the suite starts a test server and runs
 * this with the server's URL last and the scenario in MCP_CONFORMANCE_SCENARIO. It drives the real `pda` CLI
 * (dist/main.js) at that server, as a person would: `pda tools`, `pda call …` with --hil for forms.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const MAIN = join(dirname(fileURLToPath(import.meta.url)), "../../main.js");

/** What pda does in each scenario (the tools are the ones each scenario's test server offers). */
export const CLIENT_SCENARIOS: Record<string, string[][]> = {
  initialize: [["tools"]],
  tools_call: [["call", "s.add_numbers", '{"a": 2, "b": 3}']],
  "elicitation-sep1034-client-defaults": [
    ["call", "s.test_client_elicitation_defaults", "--hil", "policy:defaults"],
  ],
  "sse-retry": [["call", "s.test_reconnection"]],
};

function main(): number {
  const url = process.argv.at(-1);
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
  const steps = CLIENT_SCENARIOS[scenario];
  if (!url || !steps) {
    process.stderr.write(`conformance client: no plan for scenario "${scenario}" (url ${url})\n`);
    return 2;
  }
  const dir = mkdtempSync(join(tmpdir(), "pda-conformance-"));
  try {
    writeFileSync(join(dir, "mcp_server_config.yaml"), JSON.stringify({ servers: [{ id: "s", url }] }));
    for (const args of steps) {
      const r = spawnSync(process.execPath, [MAIN, "--config", dir, "--db", join(dir, "pda.db"), ...args], {
        stdio: "inherit",
        env: { ...process.env, NO_COLOR: "1" },
      });
      if (r.status !== 0) return r.status ?? 1;
    }
    return 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = main();
