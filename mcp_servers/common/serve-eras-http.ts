/**
 * A bundled MCP server over Streamable HTTP (`--http [host:]port`), serving both protocol eras at `/mcp`:
 * - 2026-07-28 requests (those with the `_meta` envelope) go to the SDK's `createMcpHandler`, which builds a
 *   server per request from `create("modern")` (that era is stateless);
 * - 2025-era traffic (`initialize`, then requests with an `Mcp-Session-Id`, GET streams, DELETE) keeps its
 *   sessions: one server from `create("legacy")` per session, so server-to-client streams, notifications and
 *   per-session state (the robot's episode) work as they did with SDK v1.
 * The listening URL is printed on stdout (`listening <url>`) so a parent can read the port. Requests whose Host
 * or Origin is not loopback (or allowed by `--allow-host`) are refused before either era sees them: rebinding.ts.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { getRequestListener } from "@hono/node-server";
import {
  WebStandardStreamableHTTPServerTransport,
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  type McpServer,
} from "@modelcontextprotocol/server";
import { listenAddress, listenUntilSignal, reply, serveOrExit } from "./http-serve.js";
import { HostGuard } from "./rebinding.js";
import { factoryOf, type CreateServer, type ServeOptions } from "./serve-types.js";

/** `spec` is host:port, [v6]:port or a bare port. */
export async function serveHttpFromArgs(
  create: CreateServer,
  spec: string,
  argv: string[],
  options: ServeOptions,
): Promise<void> {
  await serveOrExit(async () => {
    const { host, port } = listenAddress(spec);
    await serveHttp(create, host, port, HostGuard.fromArgs(argv, host), options);
  });
}

function refusal(status: number, message: string): Response {
  return Response.json({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }, { status });
}

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  server: McpServer;
}

/** The 2025 era with sessions, as the SDK's Streamable HTTP transport serves it. */
function legacySessions(create: CreateServer) {
  const sessions = new Map<string, Session>();
  const handle = async (request: Request): Promise<Response> => {
    const id = request.headers.get("mcp-session-id") ?? undefined;
    const session = id ? sessions.get(id) : undefined;
    if (session) return session.transport.handleRequest(request);
    if (id || request.method !== "POST") return refusal(id ? 404 : 400, "no valid session id");
    let body: unknown;
    try {
      body = await request.clone().json();
    } catch {
      return refusal(400, "body is not JSON");
    }
    if (!isInitializeRequest(body)) return refusal(400, "no valid session id");
    const server = create("legacy");
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (newId) => void sessions.set(newId, { transport, server }),
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    return transport.handleRequest(request, { parsedBody: body });
  };
  const close = async () => {
    for (const { server } of sessions.values()) await server.close().catch(() => {});
  };
  return { handle, close };
}

async function serveHttp(
  create: CreateServer,
  host: string,
  port: number,
  guard: HostGuard,
  options: ServeOptions,
): Promise<void> {
  const onerror = (e: Error) => process.stderr.write(`mcp: ${e.message}\n`);
  const modern = createMcpHandler(factoryOf(create), { legacy: "reject", onerror });
  const legacy = legacySessions(create);
  const mcp = getRequestListener(
    async (request) => {
      if (new URL(request.url).pathname !== "/mcp") return refusal(404, "not found: use /mcp");
      return (await isLegacyRequest(request)) ? legacy.handle(request) : modern.fetch(request);
    },
    {
      // The SDK checks `instanceof Request`/`Response`: keep Node's own classes.
      overrideGlobalObjects: false,
      errorHandler: (e) => refusal(500, e instanceof Error ? e.message : String(e)),
    },
  );

  const http = createServer((req, res) => {
    // Before anything else, so a rebound page gets no session, no server and no hint of the routes.
    const refused = guard.refusal(req.headers);
    if (refused) return reply(res, 403, refused);
    void mcp(req, res);
  });

  await listenUntilSignal(
    http,
    host,
    port,
    async () => {
      await legacy.close();
      await modern.close().catch(() => {});
    },
    options,
  );
}
