/**
 * The one place the hub builds the client transport of a server reached by URL (Streamable HTTP, or legacy
 * HTTP+SSE): its headers, the answer-size cap, and OAuth (mcp_servers/hub/auth/), which rides on the fetch:
 * a 401 is answered inside the request (token refresh, or a login when a person is there), not by a reconnect.
 */
import {
  SSEClientTransport,
  StreamableHTTPClientTransport,
  type Transport,
} from "@modelcontextprotocol/client";
import { withRemoteAuth } from "./auth/index.js";
import type { ServerConfig } from "./config.js";
import { cappedFetch } from "./http-cap.js";

/** The client transport of server `id` at `config.url` (which the caller has checked is set). */
export function httpTransport(id: string, config: ServerConfig): Transport {
  const url = new URL(config.url!);
  const common = {
    requestInit: { headers: config.headers },
    fetch: withRemoteAuth(
      id,
      { url: config.url!, headers: config.headers, auth: config.auth },
      cappedFetch(),
    ),
  };
  return config.transport === "sse"
    ? new SSEClientTransport(url, common)
    : new StreamableHTTPClientTransport(url, common);
}
