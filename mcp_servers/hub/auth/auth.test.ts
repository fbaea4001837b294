/**
 * The token store (per-server files, 0600 in a 0700 folder, logout removes) and the fetch a remote server's
 * transport gets: what it sends without a login, and the clear error when a 401 comes and no person is there.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  AuthError,
  PdaOAuthProvider,
  TokenStore,
  authFetch,
  idTokenClaims,
  parsePasted,
  withRemoteAuth,
  type AuthFile,
} from "./index.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-auth-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const file = (server: string, token: string): AuthFile => ({
  version: 1,
  server,
  serverUrl: `https://${server}.example/mcp`,
  tokens: { access_token: token, token_type: "Bearer" },
});

describe("TokenStore", () => {
  it("keeps one file per server, 0600 in a 0700 folder, and logout removes only that server's", () => {
    const store = new TokenStore(join(dir, "auth"));
    store.save(file("notion", "t1"));
    store.save(file("corp/eu one", "t2")); // a name that is no file name
    expect(statSync(store.dir).mode & 0o777).toBe(0o700);
    expect(statSync(store.path("notion")).mode & 0o777).toBe(0o600);
    expect(statSync(store.path("corp/eu one")).mode & 0o777).toBe(0o600);
    expect(store.path("corp/eu one").startsWith(store.dir + "/")).toBe(true);
    expect(store.load("notion")?.tokens?.access_token).toBe("t1");
    expect(store.list().map((f) => f.server)).toEqual(["corp/eu one", "notion"]);

    expect(store.remove("notion")).toBe(true);
    expect(store.load("notion")).toBeUndefined();
    expect(store.remove("notion")).toBe(false);
    expect(store.load("corp/eu one")?.tokens?.access_token).toBe("t2");
  });

  it("tightens a folder made wider by something else, and ignores a file made for another URL", () => {
    const store = new TokenStore(join(dir, "auth"));
    store.save(file("a", "t"));
    rmSync(store.path("a"));
    chmodSync(store.dir, 0o755);
    store.save(file("a", "t"));
    expect(statSync(store.dir).mode & 0o777).toBe(0o700);
    expect(store.load("a", "https://a.example/mcp")).toBeDefined();
    expect(store.load("a", "https://elsewhere.example/mcp")).toBeUndefined();
  });

  it("names the file and the way out when a file is not an auth file", () => {
    const store = new TokenStore(join(dir, "auth"));
    store.save(file("a", "t"));
    writeFileSync(store.path("a"), JSON.stringify({ version: 9 }));
    expect(() => store.load("a")).toThrow(/is not a pda auth file.*pda auth logout a/);
  });

  it("the provider saves what the SDK hands it and a new login forgets only the tokens", () => {
    const store = new TokenStore(join(dir, "auth"));
    const p = new PdaOAuthProvider("s", "https://s.example/mcp", store);
    p.saveClientInformation({ client_id: "c1", redirect_uris: ["http://127.0.0.1:1/callback"] });
    p.saveTokens({ access_token: "at", token_type: "Bearer", refresh_token: "rt" });
    const again = new PdaOAuthProvider("s", "https://s.example/mcp", store);
    expect(again.tokens()?.refresh_token).toBe("rt");
    again.forgetTokens();
    expect(new PdaOAuthProvider("s", "https://s.example/mcp", store).tokens()).toBeUndefined();
    expect(new PdaOAuthProvider("s", "https://s.example/mcp", store).clientInformation()?.client_id).toBe(
      "c1",
    );
    // A flow on another loopback port registers again (the registration names its redirect URL).
    again.useRedirect("http://127.0.0.1:2/callback");
    expect(again.clientInformation()).toBeUndefined();
  });
});

describe("parsePasted", () => {
  it("takes the query of a pasted redirect URL, else the text as the code", () => {
    expect(parsePasted(" http://127.0.0.1:5/callback?code=abc&state=xyz \n").get("state")).toBe("xyz");
    expect(parsePasted("abc").get("code")).toBe("abc");
  });
});

/** A loopback server answering every request with `status`; records each request's headers. */
async function httpServer(status: number, headers: Record<string, string> = {}) {
  const seen: IncomingHttpHeaders[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    res.writeHead(status, { "content-type": "application/json", ...headers }).end("{}");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  return { url, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe("the fetch of a remote server's transport", () => {
  it("passes an unauthenticated server's answers through and sends no Authorization header", async () => {
    const s = await httpServer(200);
    try {
      const f = withRemoteAuth("open", { url: s.url }, fetch, {
        store: new TokenStore(join(dir, "auth")),
        person: undefined,
      });
      const res = await f(s.url, { method: "POST", body: "{}" });
      expect(res.status).toBe(200);
      expect(s.seen[0]!.authorization).toBeUndefined();
    } finally {
      await s.close();
    }
  });

  it("a 401 with no person fails with AUTH_REQUIRED naming `pda auth login`, and asks nothing more", async () => {
    const s = await httpServer(401, {
      "www-authenticate":
        'Bearer resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource"',
    });
    try {
      const store = new TokenStore(join(dir, "auth"));
      const f = authFetch(new PdaOAuthProvider("corp", s.url, store), fetch, { person: undefined });
      const e = await f(s.url, { method: "POST", body: "{}" }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(AuthError);
      expect((e as AuthError).code).toBe("AUTH_REQUIRED");
      expect((e as AuthError).message).toContain("`pda auth login corp`");
      expect(s.seen).toHaveLength(1); // no discovery, no registration: no one could finish it
      expect(store.list()).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it("a server configured with its own Authorization header is left alone", async () => {
    const s = await httpServer(401);
    try {
      const f = withRemoteAuth("k", { url: s.url, headers: { Authorization: "Bearer static" } }, fetch, {
        store: new TokenStore(join(dir, "auth")),
        person: undefined,
      });
      expect((await f(s.url, { method: "POST", body: "{}" })).status).toBe(401);
    } finally {
      await s.close();
    }
  });
});

/** A JWT-shaped ID token with these claims (unsigned: the IdP, not pda, verifies it). */
const idToken = (claims: object) => `e30.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.c2ln`;

/**
 * An enterprise IdP on loopback: RFC 8414 metadata naming its token endpoint, which answers an RFC 8693 token
 * exchange with an ID-JAG and records each request's form.
 */
async function idp(metadata?: (base: string) => object) {
  const forms: URLSearchParams[] = [];
  const server: Server = createServer((req, res) => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    let body = "";
    req.on("data", (b: Buffer) => (body += b.toString()));
    req.on("end", () => {
      if (req.url === "/.well-known/oauth-authorization-server")
        return res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify(
            metadata?.(base) ?? {
              issuer: base,
              authorization_endpoint: `${base}/authorize`,
              token_endpoint: `${base}/token`,
              response_types_supported: ["code"],
            },
          ),
        );
      if (req.url !== "/token") return res.writeHead(404).end();
      forms.push(new URLSearchParams(body));
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          access_token: "the-id-jag",
          issued_token_type: "urn:ietf:params:oauth:token-type:id-jag",
          token_type: "N_A",
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, forms, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe("cross-app access (auth.idp)", () => {
  const mcp = "https://mcp.crm.example/mcp";
  const as = "https://auth.crm.example";

  it("exchanges the stored ID token at the discovered IdP for an ID-JAG and asks the AS for a jwt-bearer grant", async () => {
    const i = await idp();
    try {
      const store = new TokenStore(join(dir, "auth"));
      const idpConfig = { issuer: i.url, client_id: "pda-at-idp", client_secret: "idp-secret" };
      const token = idToken({ sub: "ann", exp: Math.floor(Date.now() / 1000) + 3600 });
      new PdaOAuthProvider("crm", mcp, store, { idp: idpConfig }).useClient({
        clientId: "pda-at-crm",
        clientSecret: "crm-secret",
        idToken: token,
      });
      // A later run: the ID token and client come from the 0600 file.
      const p = new PdaOAuthProvider("crm", mcp, store, { idp: idpConfig });
      expect(p.nonInteractive).toBe(true);
      expect(p.redirectUrl).toBeUndefined();
      expect(p.clientMetadata.grant_types).toEqual(["urn:ietf:params:oauth:grant-type:jwt-bearer"]);
      p.saveAuthorizationServerUrl(as);
      p.saveResourceUrl(mcp);
      const req = await p.prepareTokenRequest("crm:read");
      expect(Object.fromEntries(req!)).toEqual({
        grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
        assertion: "the-id-jag",
        scope: "crm:read",
      });
      expect(i.forms).toHaveLength(1);
      expect(Object.fromEntries(i.forms[0]!)).toEqual({
        grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
        requested_token_type: "urn:ietf:params:oauth:token-type:id-jag",
        subject_token_type: "urn:ietf:params:oauth:token-type:id_token",
        subject_token: token,
        audience: as,
        resource: mcp,
        client_id: "pda-at-idp",
        client_secret: "idp-secret",
        scope: "crm:read",
      });
      expect(statSync(store.path("crm")).mode & 0o777).toBe(0o600);
    } finally {
      await i.close();
    }
  });

  it("an expired or missing ID token is AUTH_REQUIRED naming the login that gives one, and nothing is sent", async () => {
    const i = await idp();
    try {
      const store = new TokenStore(join(dir, "auth"));
      const p = new PdaOAuthProvider("crm", mcp, store, { idp: { issuer: i.url, client_id: "c" } });
      p.useClient({ clientId: "pda-at-crm", clientSecret: "s" });
      p.saveAuthorizationServerUrl(as);
      p.saveResourceUrl(mcp);
      const none = await p.prepareTokenRequest().catch((e: unknown) => e);
      expect(none).toBeInstanceOf(AuthError);
      expect((none as AuthError).code).toBe("AUTH_REQUIRED");
      expect((none as AuthError).message).toContain("pda auth login crm --id-token-file <file>");
      p.useClient({ idToken: idToken({ sub: "ann", exp: 1_700_000_000 }) });
      const expired = await p.prepareTokenRequest().catch((e: unknown) => e);
      expect((expired as AuthError).code).toBe("AUTH_REQUIRED");
      expect((expired as AuthError).message).toMatch(/expired at 2023-11-14T22:13:20\.000Z/);
      expect(i.forms).toHaveLength(0);
      expect(() => idTokenClaims("crm", "not-a-jwt")).toThrow(/ID token for server "crm" is not a JWT/);
    } finally {
      await i.close();
    }
  });

  it("an IdP whose metadata names no usable token endpoint is AUTH_FAILED pointing at auth.idp.token_endpoint", async () => {
    const i = await idp((base) => ({ issuer: base, token_endpoint: `${base}/token` }));
    try {
      const p = new PdaOAuthProvider("crm", mcp, new TokenStore(join(dir, "auth")), {
        idp: { issuer: i.url, client_id: "c" },
      });
      p.useClient({ clientId: "pda-at-crm", clientSecret: "s", idToken: idToken({ sub: "ann" }) });
      p.saveAuthorizationServerUrl(as);
      p.saveResourceUrl(mcp);
      const e = await p.prepareTokenRequest().catch((x: unknown) => x);
      expect((e as AuthError).code).toBe("AUTH_FAILED");
      expect((e as AuthError).message).toMatch(
        /cannot find the token endpoint of the IdP http:\/\/127\.0\.0\.1:\d+ \(.*authorization_endpoint.*\): set auth\.idp\.token_endpoint/,
      );
      expect(i.forms).toHaveLength(0);
    } finally {
      await i.close();
    }
  });
});
