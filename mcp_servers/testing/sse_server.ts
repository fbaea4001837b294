#!/usr/bin/env node
/**
 * A server that speaks only the legacy HTTP+SSE transport (protocol 2024-11-05), as many deployed servers
 * still do: GET /sse opens the event stream, POST /messages?sessionId=… carries requests. Prints
 * `listening <url>` on stdout. Tool: `shout` (text upper-cased). Loopback only.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { z } from "zod";

function create(): McpServer {
  const server = new McpServer({ name: "legacy-sse", version: "0.1.0" });
  server.registerTool(
    "shout",
    { description: "The text in capitals.", inputSchema: { text: z.string() } },
    ({ text }) => ({ content: [{ type: "text" as const, text: text.toUpperCase() }] }),
  );
  return server;
}

const sessions = new Map<string, SSEServerTransport>();
const http = createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://127.0.0.1");
  if (req.method === "GET" && url.pathname === "/sse") {
    const transport = new SSEServerTransport("/messages", res);
    sessions.set(transport.sessionId, transport);
    res.on("close", () => sessions.delete(transport.sessionId));
    void create().connect(transport);
    return;
  }
  const transport = sessions.get(url.searchParams.get("sessionId") ?? "");
  if (req.method === "POST" && url.pathname === "/messages" && transport) {
    void transport.handlePostMessage(req, res);
    return;
  }
  res.writeHead(404).end();
});
http.listen(0, "127.0.0.1", () => {
  const { port } = http.address() as AddressInfo;
  process.stdout.write(`listening http://127.0.0.1:${port}/sse\n`);
});
