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

const BROWSER = join(dirname(fileURLToPath(import.meta.url)), "browser.js");

/** The suite's client metadata document URL (basic-cimd expects pda to use it as its client_id). */
const CIMD_URL = "https://conformance-test.local/client-metadata.json";

/** What the suite tells the client in MCP_CONFORMANCE_CONTEXT (pre-registered credentials, a key). */
interface Context {
  client_id?: string;
  client_secret?: string;
  private_key_pem?: string;
  signing_algorithm?: string;
  /** Cross-app access: the enterprise IdP, pda's client there, and the person's ID token from it. */
  idp_issuer?: string;
  idp_token_endpoint?: string;
  idp_client_id?: string;
  idp_id_token?: string;
}

const CROSS_APP = "auth/cross-app-access-complete-flow";

/** The server entry's `auth`, where the scenario's server signs in through an enterprise IdP. */
function serverAuth(scenario: string): object {
  if (scenario !== CROSS_APP) return {};
  const { idp_issuer = "", idp_token_endpoint = "", idp_client_id = "" } = context();
  // The token endpoint as given: the suite's IdP metadata lacks fields OpenID discovery requires.
  return {
    auth: { idp: { issuer: idp_issuer, token_endpoint: idp_token_endpoint, client_id: idp_client_id } },
  };
}

function context(): Context {
  try {
    return JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}") as Context;
  } catch {
    return {};
  }
}

/**
 * An auth scenario: pda calls the test server's tool, the login happening on the way (the person's browser
 * is browser.js); where the scenario gives the client something beforehand, `pda auth login` with it first.
 */
function authPlan(scenario: string, dir: string): string[][] | undefined {
  if (!scenario.startsWith("auth/")) return undefined;
  const call = ["call", "s.test-tool"];
  const login = ["auth", "login", "s"];
  const { client_id = "", client_secret = "", private_key_pem = "", signing_algorithm = "ES256" } = context();
  const machine = [...login, "--grant", "client_credentials", "--client-id", client_id];
  switch (scenario) {
    case "auth/basic-cimd":
      return [[...login, "--client-metadata-url", CIMD_URL], call];
    case "auth/pre-registration":
      return [[...login, "--client-id", client_id, "--client-secret", client_secret], call];
    case "auth/client-credentials-basic":
      return [[...machine, "--client-secret", client_secret], call];
    case CROSS_APP: {
      const idToken = join(dir, "id_token.jwt");
      writeFileSync(idToken, context().idp_id_token ?? "");
      return [
        [...login, "--client-id", client_id, "--client-secret", client_secret, "--id-token-file", idToken],
        call,
      ];
    }
    case "auth/client-credentials-jwt": {
      const key = join(dir, "client.pem");
      writeFileSync(key, private_key_pem);
      return [[...machine, "--client-key", key, "--client-key-alg", signing_algorithm], call];
    }
    default:
      return [call];
  }
}

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
  const dir = mkdtempSync(join(tmpdir(), "pda-conformance-"));
  const steps = CLIENT_SCENARIOS[scenario] ?? authPlan(scenario, dir);
  if (!url || !steps) {
    rmSync(dir, { recursive: true, force: true });
    process.stderr.write(`conformance client: no plan for scenario "${scenario}" (url ${url})\n`);
    return 2;
  }
  try {
    writeFileSync(
      join(dir, "mcp_server_config.yaml"),
      JSON.stringify({ servers: [{ id: "s", url, ...serverAuth(scenario) }] }),
    );
    for (const args of steps) {
      const r = spawnSync(process.execPath, [MAIN, "--config", dir, "--db", join(dir, "pda.db"), ...args], {
        stdio: "inherit",
        // Logins go to this run's own folder; the "browser" follows the authorization URL.
        env: {
          ...process.env,
          NO_COLOR: "1",
          XDG_CONFIG_HOME: join(dir, "xdg"),
          PDA_BROWSER: `${process.execPath} ${BROWSER}`,
        },
      });
      if (r.status !== 0) return r.status ?? 1;
    }
    return 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = main();
