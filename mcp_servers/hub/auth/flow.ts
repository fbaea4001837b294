/**
 * Getting a server's authorization with the SDK's `auth()`: refresh when a refresh token is there, else the
 * authorization code flow with PKCE (dynamic registration or a client ID metadata document on the way), the
 * person answering through the loopback callback or a paste. And `authFetch`, the fetch a transport is given
 * so that a 401 (no or stale token) or a 403 insufficient_scope (step-up) is answered inside the request.
 */
import {
  auth,
  computeScopeUnion,
  discoverOAuthProtectedResourceMetadata,
  IssuerMismatchError,
  type AuthOptions,
  type AuthResult,
  extractWWWAuthenticateParams,
  type FetchLike,
} from "@modelcontextprotocol/client";
import { errorMessage } from "../../../core/index.js";
import { AuthError, loginNeeded } from "./errors.js";
import { PERSON_WAIT_MS, startCallback, type Person } from "./person.js";
import type { PdaOAuthProvider } from "./provider.js";

export interface AuthorizeOptions {
  /** From the server's WWW-Authenticate challenge. */
  scope?: string;
  resourceMetadataUrl?: URL;
  /** Skip the refresh: a step-up needs a scope a refresh cannot widen to. */
  force?: boolean;
  /** Who answers; without one, only a refresh can succeed. */
  person?: Person;
  /** For the authorization server's endpoints. */
  fetchFn?: FetchLike;
}

/** Makes sure `provider` holds a usable token for its server: refreshed, or a new authorization. */
export async function authorize(provider: PdaOAuthProvider, opts: AuthorizeOptions = {}): Promise<void> {
  const { server, serverUrl } = provider;
  const base = { serverUrl, resourceMetadataUrl: opts.resourceMetadataUrl, fetchFn: opts.fetchFn };
  const person = opts.person;
  if (provider.nonInteractive) {
    provider.checkLogin();
    const r = await sdk(server, () => runAuth(provider, { ...base, scope: opts.scope }));
    if (r !== "AUTHORIZED")
      throw new AuthError("AUTH_FAILED", server, `server "${server}": no token was issued`);
    return;
  }
  if (!person) {
    // Nothing to refresh: no request is sent (a registration now would be for a login no one can finish).
    if (!provider.tokens()?.refresh_token) throw loginNeeded(server);
    const r = await sdk(server, () => runAuth(provider, { ...base, scope: opts.scope }));
    if (r !== "AUTHORIZED") throw loginNeeded(server);
    return;
  }
  const callback = await startCallback();
  const stop = new AbortController();
  try {
    provider.useRedirect(callback.redirectUrl);
    const scope = opts.scope;
    const first = await sdk(server, () =>
      runAuth(provider, { ...base, scope, forceReauthorization: opts.force }),
    );
    if (first === "AUTHORIZED") return; // refreshed
    const url = provider.takeAuthorizationUrl();
    if (!url) throw new AuthError("AUTH_FAILED", server, `no authorization URL for server "${server}"`);
    const params = await waitFor(server, [callback.params, person.present(url, server, stop.signal)]);
    const error = params.get("error");
    if (error)
      throw new AuthError(
        "AUTH_FAILED",
        server,
        `the authorization server refused: ${error}${params.get("error_description") ? ` (${params.get("error_description")})` : ""}`,
      );
    const state = params.get("state");
    if (state !== null && state !== provider.expectedState)
      throw new AuthError(
        "AUTH_FAILED",
        server,
        "the callback's state does not match the request's: not used",
      );
    const code = params.get("code");
    if (!code) throw new AuthError("AUTH_FAILED", server, "the callback brought no authorization code");
    const iss = params.get("iss") ?? undefined;
    const r = await sdk(server, () => runAuth(provider, { ...base, scope, authorizationCode: code, iss }));
    if (r !== "AUTHORIZED")
      throw new AuthError("AUTH_FAILED", server, `server "${server}": no token after the code`);
    provider.rememberScope(computeScopeUnion(provider.scope, scope));
  } finally {
    stop.abort();
    callback.close();
  }
}

/**
 * The SDK's `auth()`, and once more without the RFC 8414 issuer check for a server of the 2025-03-26 revision
 * (no protected resource metadata: the authorization server is found at the MCP server's origin), whose
 * metadata could name another issuer before that rule came to MCP.
 */
async function runAuth(provider: PdaOAuthProvider, options: AuthOptions): Promise<AuthResult> {
  try {
    return await auth(provider, { ...options, skipIssuerMetadataValidation: provider.legacyIssuer });
  } catch (e) {
    if (provider.legacyIssuer || !(e instanceof IssuerMismatchError) || e.kind !== "metadata") throw e;
    const prm = await discoverOAuthProtectedResourceMetadata(
      provider.serverUrl,
      { resourceMetadataUrl: options.resourceMetadataUrl },
      options.fetchFn,
    ).catch(() => undefined);
    if (prm) throw e;
    provider.legacyIssuer = true;
    return auth(provider, { ...options, skipIssuerMetadataValidation: true });
  }
}

/** The SDK's failures (discovery, registration, token endpoint) as AUTH_FAILED naming the server. */
async function sdk<T>(server: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof AuthError) throw e;
    throw new AuthError(
      "AUTH_FAILED",
      server,
      `authorization for server "${server}" failed: ${errorMessage(e)}`,
      {
        cause: e,
      },
    );
  }
}

function waitFor<T>(server: string, answers: Promise<T>[]): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new AuthError("AUTH_FAILED", server, `no authorization within ${PERSON_WAIT_MS / 60_000} minutes`),
        ),
      PERSON_WAIT_MS,
    );
    timer.unref();
  });
  return Promise.race([...answers, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A fetch for a remote server's transport that carries its bearer token and, on a 401 or a 403
 * insufficient_scope, authorizes (one at a time for all requests) and sends the request again, once.
 */
export function authFetch(
  provider: PdaOAuthProvider,
  next: FetchLike,
  opts: { person?: Person } = {},
): FetchLike {
  let pending: Promise<void> | undefined;
  const once = (o: AuthorizeOptions) => {
    pending ??= authorize(provider, { ...o, person: opts.person, fetchFn: next }).finally(
      () => (pending = undefined),
    );
    return pending;
  };
  const send = (input: string | URL, init: RequestInit | undefined, token: string | undefined) => {
    const headers = new Headers(init?.headers);
    if (token) headers.set("authorization", `Bearer ${token}`);
    return next(input, { ...init, headers });
  };
  return async (input, init) => {
    const token = provider.accessToken;
    const res = await send(input, init, token);
    if (res.status !== 401 && res.status !== 403) return res;
    const challenge = extractWWWAuthenticateParams(res);
    if (res.status === 403 && challenge.error !== "insufficient_scope") return res;
    await res.body?.cancel();
    if (provider.accessToken === token || pending) {
      // Not already renewed by a request that failed at the same time.
      const scope = res.status === 403 ? computeScopeUnion(provider.scope, challenge.scope) : challenge.scope;
      // A refresh cannot widen the scope (RFC 6749 §6): a step-up is a new authorization.
      await once({ scope, resourceMetadataUrl: challenge.resourceMetadataUrl, force: res.status === 403 });
    }
    return send(input, init, provider.accessToken);
  };
}
