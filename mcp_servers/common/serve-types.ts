/**
 * What the serve entries (serve.ts and serve-http.ts for the v1 test servers, serve-eras.ts and
 * serve-eras-http.ts for the bundled ones) share, in a file of its own so the lazily loaded HTTP halves
 * do not import their stdio halves back.
 */
import type { McpServer, McpServerFactory } from "@modelcontextprotocol/server";

export interface ServeOptions {
  /** Called once when the process is about to exit (close databases and the like). */
  onShutdown?: () => void | Promise<void>;
}

/** Which era a server instance serves; the modern era has no session, so per-client state cannot hang on one. */
export type Era = "legacy" | "modern";

/**
 * Makes a server instance for one serving unit: a stdio connection, a 2025-era HTTP session, or one
 * 2026-07-28 HTTP request (that era is stateless: an instance lives for one request).
 */
export type CreateServer = (era: Era) => McpServer;

/** The SDK's factory shape over ours: servers need only the era. */
export function factoryOf(create: CreateServer): McpServerFactory {
  return (ctx) => create(ctx.era);
}
