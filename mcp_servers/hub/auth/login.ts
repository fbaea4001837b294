/**
 * `pda auth login | logout | status` as functions: what the CLI command calls, and what the tests call. The
 * v1 SDK client a login connects with (with Ajv and zod-to-json-schema, ~140 modules) is imported by `login`
 * only: the hub imports this folder for every remote server, and a run never logs in this way (#16).
 */
import type { FetchLike } from "@modelcontextprotocol/client";
import type { IdpConfig } from "../config.js";
import { authFetch } from "./flow.js";
import type { Person } from "./person.js";
import { PdaOAuthProvider, type LoginClient } from "./provider.js";
import { asTokens, type AuthFile, type TokenStore } from "./store.js";

export interface RemoteServer {
  id: string;
  url: string;
  transport?: "http" | "sse" | string;
  headers?: Record<string, string>;
  /** The config's `auth`: an enterprise IdP means cross-app access. */
  auth?: { idp: IdpConfig };
}

export interface LoginOptions extends LoginClient {
  store: TokenStore;
  person: Person;
  /** A scope to ask for beyond what the server's challenge names. */
  scope?: string;
  fetch?: FetchLike;
}

export interface LoginResult {
  server: string;
  /** False: the server answered without asking for authorization. */
  authorized: boolean;
  scope?: string;
}

/**
 * Logs in to `server` anew: forgets its tokens (keeping its client registration), connects as the hub does,
 * and lets the server's 401 start the authorization, answered by `person`.
 */
export async function login(server: RemoteServer, opts: LoginOptions): Promise<LoginResult> {
  const provider = new PdaOAuthProvider(server.id, server.url, opts.store, { idp: server.auth?.idp });
  provider.useClient(opts);
  provider.rememberScope(opts.scope);
  provider.forgetTokens();
  const fetch = authFetch(provider, opts.fetch ?? globalThis.fetch, { person: opts.person });
  const [{ Client }, { SSEClientTransport }, { StreamableHTTPClientTransport }] = await Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/sse.js"),
    import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
  ]);
  const url = new URL(server.url);
  const requestInit = { headers: server.headers };
  const transport =
    server.transport === "sse"
      ? new SSEClientTransport(url, { requestInit, fetch })
      : new StreamableHTTPClientTransport(url, { requestInit, fetch });
  const client = new Client({ name: "pda", version: "0.1.0" }, { capabilities: {} });
  try {
    await client.connect(transport);
    await client.listTools();
  } finally {
    await client.close().catch(() => {});
  }
  const tokens = provider.tokens();
  return {
    server: server.id,
    authorized: tokens !== undefined,
    ...(tokens?.scope && { scope: tokens.scope }),
  };
}

export interface AuthStatus {
  server: string;
  serverUrl: string;
  loggedIn: boolean;
  scope?: string;
  /** When the access token expires (ISO), if the server said. */
  expiresAt?: string;
  expired?: boolean;
  refreshable: boolean;
  clientId?: string;
  file: string;
}

export function status(file: AuthFile, store: TokenStore, now = Date.now()): AuthStatus {
  const tokens = asTokens(file);
  const expiresMs =
    tokens?.expires_in !== undefined && file.savedAt !== undefined
      ? file.savedAt + tokens.expires_in * 1000
      : undefined;
  return {
    server: file.server,
    serverUrl: file.serverUrl,
    loggedIn: tokens !== undefined,
    ...(tokens?.scope && { scope: tokens.scope }),
    ...(expiresMs !== undefined && {
      expiresAt: new Date(expiresMs).toISOString(),
      expired: expiresMs <= now,
    }),
    refreshable: Boolean(tokens?.refresh_token),
    ...(file.client && { clientId: file.client.client_id }),
    file: store.path(file.server),
  };
}
