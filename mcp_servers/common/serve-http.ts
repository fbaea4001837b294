/**
 * A bundled MCP server over Streamable HTTP (`--http [host:]port`). Each client session gets its own McpServer
 * from `create`, as the SDK binds one server to one transport. The listening URL is printed on stdout
 * (`listening <url>`) so a parent can read the port. Requests whose Host or Origin is not loopback (or allowed
 * by `--allow-host`) are refused: rebinding.ts.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { listenAddress, listenUntilSignal, reply, serveOrExit } from "./http-serve.js";
import { HostGuard } from "./rebinding.js";
import type { ServeOptions } from "./serve-types.js";

/** `spec` is host:port, [v6]:port or a bare port. */
export async function serveHttpFromArgs(
  create: () => McpServer,
  spec: string,
  argv: string[],
  options: ServeOptions,
): Promise<void> {
  await serveOrExit(async () => {
    const { host, port } = listenAddress(spec);
    await serveHttp(create, host, port, HostGuard.fromArgs(argv, host), options);
  });
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

async function serveHttp(
  create: () => McpServer,
  host: string,
  port: number,
  guard: HostGuard,
  options: ServeOptions,
): Promise<void> {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: McpServer }>();

  const http = createServer((req, res) => {
    void (async () => {
      // Before anything else, so a rebound page gets no session, no server and no hint of the routes.
      const refused = guard.refusal(req.headers);
      if (refused) return reply(res, 403, refused);
      const url = new URL(req.url ?? "/", "http://x");
      if (url.pathname !== "/mcp") return reply(res, 404, "not found: use /mcp");
      const sid = req.headers["mcp-session-id"];
      const id = typeof sid === "string" ? sid : undefined;
      if (req.method === "POST") {
        let body: unknown;
        try {
          body = await readJson(req);
        } catch {
          return reply(res, 400, "body is not JSON");
        }
        let session = id ? sessions.get(id) : undefined;
        if (!session) {
          if (id || !isInitializeRequest(body)) return reply(res, 400, "no valid session id");
          const server = create();
          const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: (newId) => void sessions.set(newId, { transport, server }),
          });
          transport.onclose = () => {
            if (transport.sessionId) sessions.delete(transport.sessionId);
          };
          await server.connect(transport);
          session = { transport, server };
        }
        return session.transport.handleRequest(req, res, body);
      }
      const session = id ? sessions.get(id) : undefined;
      if (!session) return reply(res, 400, "no valid session id");
      return session.transport.handleRequest(req, res);
    })().catch((e: unknown) => {
      if (!res.headersSent) reply(res, 500, e instanceof Error ? e.message : String(e));
    });
  });

  await listenUntilSignal(
    http,
    host,
    port,
    async () => {
      for (const { server } of sessions.values()) await server.close().catch(() => {});
    },
    options,
  );
}
