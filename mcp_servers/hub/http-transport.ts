/**
 * The one place the hub builds the client transport of a server reached by URL (Streamable HTTP, or legacy
 * HTTP+SSE): its headers, the answer-size cap, and an optional auth provider (OAuth: mcp_servers/hub/auth/
 * plugs in here, so every HTTP connect goes through the same provider).
 */
import {
  SSEClientTransport,
  StreamableHTTPClientTransport,
  type AuthProvider,
  type OAuthClientProvider,
  type Transport,
} from "@modelcontextprotocol/client";
import type { ServerConfig } from "./config.js";
import { cappedFetch } from "./http-cap.js";

export interface HttpTransportOptions {
  /** Adds the Authorization header and answers a 401 (OAuth login, token refresh). */
  authProvider?: AuthProvider | OAuthClientProvider;
}

/** The client transport for `config.url` (which the caller has checked is set). */
export function httpTransport(config: ServerConfig, options: HttpTransportOptions = {}): Transport {
  const url = new URL(config.url!);
  const common = {
    requestInit: { headers: config.headers },
    fetch: cappedFetch(),
    ...(options.authProvider && { authProvider: options.authProvider }),
  };
  return config.transport === "sse"
    ? new SSEClientTransport(url, common)
    : new StreamableHTTPClientTransport(url, common);
}
