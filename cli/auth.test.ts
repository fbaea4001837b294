/**
 * `pda auth` and a remote server that asks for OAuth, through the real CLI (no terminal: no person): the
 * connect fails with a message naming `pda auth login`; status and logout read and remove the user's
 * per-server files. Full logins are in tests/e2e/conformance.test.ts (the suite's authorization servers).
 */
import { createServer, type Server } from "node:http";
import { existsSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TokenStore } from "../mcp_servers/hub/auth/index.js";
import { cliFolder, type CliFolder } from "./harness.js";

let cli: CliFolder;
let server: Server;
let url: string;
let requests = 0;

beforeAll(async () => {
  cli = cliFolder("pda-auth-cli-");
  server = createServer((req, res) => {
    requests++;
    req.resume();
    res
      .writeHead(401, {
        "www-authenticate": `Bearer resource_metadata="${url}/.well-known/oauth-protected-resource"`,
      })
      .end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  writeFileSync(
    join(cli.config, "mcp_server_config.yaml"),
    JSON.stringify({ servers: [{ id: "corp", url }] }),
  );
});
afterAll(async () => {
  cli.close();
  await new Promise<void>((r) => server.close(() => r()));
});

/** The user's config folder of the child (HOME is the test folder). */
const store = () => new TokenStore(join(cli.dir, ".config", "pda", "auth"));

describe("pda and a server that wants a login, with no person there", () => {
  it("fails the connect with exit 3 and a message naming `pda auth login <server>`", async () => {
    const r = await cli.pda(["call", "corp.anything"]);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain('server "corp" requires authorization');
    expect(r.stderr).toContain("pda auth login corp");
    expect(requests).toBeGreaterThan(0);
    expect(existsSync(store().dir)).toBe(false); // nothing registered for a login no one can finish
  }, 90_000);

  it("auth status and logout read and remove the user's per-server file", async () => {
    store().save({
      version: 1,
      server: "corp",
      serverUrl: url,
      tokens: { access_token: "at", token_type: "Bearer", refresh_token: "rt", scope: "mcp:read" },
      savedAt: Date.now(),
    });
    const st = await cli.pda(["auth", "status", "--json"]);
    expect(st.code, st.stderr).toBe(0);
    expect(JSON.parse(st.stdout)).toMatchObject([
      { server: "corp", serverUrl: url, loggedIn: true, refreshable: true, scope: "mcp:read" },
    ]);
    const out = await cli.pda(["auth", "logout", "corp", "--json"]);
    expect(JSON.parse(out.stdout)).toEqual({ server: "corp", removed: true });
    expect(existsSync(store().path("corp"))).toBe(false);
    const none = await cli.pda(["auth", "status", "corp"]);
    expect(none.code).toBe(1);
    expect(none.stdout).toContain("corp: not logged in");
  }, 90_000);

  it("auth login names a server the config does not have (exit 2)", async () => {
    const r = await cli.pda(["auth", "login", "nope", "--json"]);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).error.code).toBe("AUTH_NOT_FOUND");
  }, 90_000);
});

describe("a server that signs in through an enterprise IdP (auth.idp, cross-app access)", () => {
  beforeAll(() =>
    writeFileSync(
      join(cli.config, "mcp_server_config.yaml"),
      JSON.stringify({
        servers: [
          { id: "corp", url },
          { id: "crm", url, auth: { idp: { issuer: "http://127.0.0.1:1", client_id: "pda" } } },
        ],
      }),
    ),
  );

  it("with no login, a call fails with exit 3 naming the login that gives an ID token, and registers nothing", async () => {
    const r = await cli.pda(["call", "crm.anything"]);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain("pda auth login crm --id-token-file <file>");
    expect(existsSync(store().path("crm"))).toBe(false);
  }, 90_000);

  it("login refuses --id-token-file for a server without auth.idp, and an ID token that is no JWT", async () => {
    const file = join(cli.dir, "id_token.jwt");
    writeFileSync(file, "not a jwt\n");
    const plain = await cli.pda(["auth", "login", "corp", "--id-token-file", file]);
    expect(plain.code).toBe(2);
    expect(plain.stderr).toContain(
      '--id-token-file is for a server with auth.idp in its config; "corp" has none',
    );
    const bad = await cli.pda(["auth", "login", "crm", "--client-id", "c", "--id-token-file", file]);
    expect(bad.code).toBe(3);
    expect(bad.stderr).toContain('the ID token for server "crm" is not a JWT');
    expect(existsSync(store().path("crm"))).toBe(false);
  }, 90_000);
});
