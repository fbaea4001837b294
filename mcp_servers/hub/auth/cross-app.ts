/**
 * Cross-app access (SEP-990, enterprise-managed authorization): the person's ID token from the enterprise IdP
 * is exchanged there for an ID-JAG (RFC 8693), which the MCP server's authorization server takes as a
 * jwt-bearer grant (RFC 7523). The SDK's CrossAppAccessProvider builds that grant request and its
 * requestJwtAuthorizationGrant does the exchange; this module feeds them the server's `auth.idp` config and
 * the ID token kept in the server's auth file, and tells a stale ID token from a refusal.
 */
import {
  CrossAppAccessProvider,
  discoverAuthorizationServerMetadata,
  requestJwtAuthorizationGrant,
  type FetchLike,
  type StoredOAuthClientInformation,
} from "@modelcontextprotocol/client";
import { ZodError, z } from "zod";
import { errorMessage } from "../../../core/index.js";
import type { IdpConfig } from "../config.js";
import { AuthError } from "./errors.js";

/** The grant the MCP authorization server is asked for, as client metadata names it. */
export const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/**
 * The ID token's claims, read without verifying the signature (the IdP verifies it): only to refuse what is
 * no JWT at login and to say "log in again" for an expired one instead of relaying the IdP's invalid_grant.
 */
export function idTokenClaims(server: string, token: string): { exp?: number } {
  const payload = token.split(".")[1];
  try {
    if (token.split(".").length !== 3 || !payload) throw new Error("not three dot-separated parts");
    const claims: unknown = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    if (typeof claims !== "object" || claims === null) throw new Error("its payload is no JSON object");
    return claims as { exp?: number };
  } catch (e) {
    throw new AuthError(
      "AUTH_FAILED",
      server,
      `the ID token for server "${server}" is not a JWT (${(e as Error).message}): give the IdP's id_token`,
    );
  }
}

/** The command that gives a server a new ID token. */
const relogin = (server: string) => `pda auth login ${server} --id-token-file <file>`;

/** A usable ID token or an AUTH_REQUIRED naming the login that gives one. */
export function usableIdToken(server: string, token: string | undefined, now = Date.now()): string {
  if (!token)
    throw new AuthError(
      "AUTH_REQUIRED",
      server,
      `server "${server}" signs in through its enterprise IdP (auth.idp) and pda holds no ID token for it: ` +
        `run \`${relogin(server)}\``,
    );
  const { exp } = idTokenClaims(server, token);
  if (typeof exp === "number" && exp * 1000 <= now)
    throw new AuthError(
      "AUTH_REQUIRED",
      server,
      `the ID token for server "${server}" expired at ${new Date(exp * 1000).toISOString()}: ` +
        `run \`${relogin(server)}\` with a new one`,
    );
  return token;
}

/** The IdP's token endpoint from its RFC 8414 or OpenID metadata, or an error that names the way around. */
async function idpTokenEndpoint(server: string, issuer: string, fetchFn: FetchLike): Promise<string> {
  let why: string;
  try {
    const metadata = await discoverAuthorizationServerMetadata(issuer, { fetchFn });
    if (metadata?.token_endpoint) return metadata.token_endpoint;
    why = "it publishes no metadata with a token_endpoint";
  } catch (e) {
    why = e instanceof ZodError ? `its metadata is invalid: ${z.prettifyError(e)}` : errorMessage(e);
  }
  throw new AuthError(
    "AUTH_FAILED",
    server,
    `server "${server}": cannot find the token endpoint of the IdP ${issuer} (${why.replace(/\s*\n\s*/g, "; ")}): ` +
      "set auth.idp.token_endpoint in the server's config",
  );
}

/** No client registered with the MCP authorization server was given at login. */
export function crossAppClientNeeded(server: string): AuthError {
  return new AuthError(
    "AUTH_REQUIRED",
    server,
    `server "${server}" signs in through its enterprise IdP (auth.idp) and needs the client registered with ` +
      `its authorization server: run \`pda auth login ${server} --client-id <id> --client-secret <secret> ` +
      "--id-token-file <file>`",
  );
}

/**
 * The jwt-bearer token request for the MCP authorization server at `authorizationServerUrl` (the ID-JAG's
 * audience) and `resourceUrl` (its resource), the ID-JAG got from the IdP on the way.
 */
export async function jwtBearerRequest(opts: {
  server: string;
  idp: IdpConfig;
  idToken: string;
  client: StoredOAuthClientInformation | undefined;
  authorizationServerUrl: string | undefined;
  resourceUrl: string | undefined;
  scope: string | undefined;
}): Promise<URLSearchParams> {
  const { server, idp, client } = opts;
  if (!client?.client_id) throw crossAppClientNeeded(server);
  if (!opts.authorizationServerUrl)
    throw new AuthError("AUTH_FAILED", server, `server "${server}": no authorization server was discovered`);
  const xaa = new CrossAppAccessProvider({
    clientId: client.client_id,
    clientSecret: client.client_secret ?? "",
    clientName: "pda",
    expectedIssuer: opts.authorizationServerUrl,
    assertion: async (ctx) => {
      const exchange = {
        audience: ctx.authorizationServerUrl,
        resource: ctx.resourceUrl,
        idToken: opts.idToken,
        clientId: idp.client_id,
        ...(idp.client_secret && { clientSecret: idp.client_secret }),
        ...(ctx.scope && { scope: ctx.scope }),
        fetchFn: ctx.fetchFn,
      };
      if (idp.token_endpoint)
        return (await requestJwtAuthorizationGrant({ ...exchange, tokenEndpoint: idp.token_endpoint }))
          .jwtAuthGrant;
      const tokenEndpoint = await idpTokenEndpoint(server, idp.issuer, ctx.fetchFn);
      return (await requestJwtAuthorizationGrant({ ...exchange, tokenEndpoint })).jwtAuthGrant;
    },
  });
  xaa.saveAuthorizationServerUrl(opts.authorizationServerUrl);
  if (opts.resourceUrl) xaa.saveResourceUrl?.(opts.resourceUrl);
  return xaa.prepareTokenRequest(opts.scope);
}
