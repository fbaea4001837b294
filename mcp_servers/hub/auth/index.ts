/**
 * OAuth 2.1 for remote MCP servers: the SDK v2 OAuthClientProvider backed by per-server files in the user's
 * config folder, the login flow (loopback callback, paste fallback), the fetch a hub transport gets, and the
 * functions behind `pda auth`.
 */
import type { FetchLike } from "@modelcontextprotocol/client";
import type { IdpConfig } from "../config.js";
import { authFetch } from "./flow.js";
import { ambientPerson, type Person } from "./person.js";
import { PdaOAuthProvider } from "./provider.js";
import { TokenStore } from "./store.js";

export { AuthError, AUTH_ERROR_CODES, type AuthErrorCode } from "./errors.js";
export { TokenStore, AuthFileSchema, defaultAuthDir, type AuthFile } from "./store.js";
export { PdaOAuthProvider, type ProviderOptions } from "./provider.js";
export { idTokenClaims } from "./cross-app.js";
export { authorize, authFetch, type AuthorizeOptions } from "./flow.js";
export {
  person,
  ambientPerson,
  browserCommand,
  parsePasted,
  type Person,
  type PersonOptions,
} from "./person.js";
export {
  login,
  status,
  type LoginOptions,
  type LoginResult,
  type AuthStatus,
  type RemoteServer,
} from "./login.js";

/**
 * The fetch for a remote server's transport: `next` with OAuth on top (the stored token sent; a 401 or a 403
 * insufficient_scope answered by a refresh or a login). A server configured with its own Authorization
 * header gets `next` unchanged, and a server that never answers 401 sees no difference but a missing header.
 */
export function withRemoteAuth(
  server: string,
  config: { url: string; headers?: Record<string, string>; auth?: { idp: IdpConfig } },
  next: FetchLike,
  deps: { store?: TokenStore; person?: Person } = {},
): FetchLike {
  if (Object.keys(config.headers ?? {}).some((h) => h.toLowerCase() === "authorization")) return next;
  const provider = new PdaOAuthProvider(server, config.url, deps.store ?? new TokenStore(), {
    idp: config.auth?.idp,
  });
  return authFetch(provider, next, { person: "person" in deps ? deps.person : ambientPerson() });
}
