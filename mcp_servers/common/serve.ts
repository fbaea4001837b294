/**
 * Runs an SDK v1 MCP server (the "legacy" test servers of mcp_servers/testing, 2025 era only; the bundled
 * servers use serve-eras.ts, which serves both eras) over stdio (the default) or, with `--http [host:]port`,
 * over Streamable HTTP (serve-http.ts, loaded only then: it brings node:http, which a stdio server must not
 * pay for at start).
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

import type { ServeOptions } from "./serve-types.js";

export type { ServeOptions };

export async function serve(
  create: () => McpServer,
  argv: string[] = process.argv.slice(2),
  options: ServeOptions = {},
): Promise<void> {
  const i = argv.indexOf("--http");
  if (i === -1) {
    const server = create();
    const transport = new StdioServerTransport();
    // The client closing our stdin is the normal way to be told to stop.
    process.stdin.on("end", () => void shutdown(server, options));
    transport.onclose = () => void shutdown(server, options);
    await server.connect(transport);
    return;
  }
  const { serveHttpFromArgs } = await import("./serve-http.js");
  await serveHttpFromArgs(create, argv[i + 1] ?? "127.0.0.1:0", argv, options);
}

let shuttingDown = false;
async function shutdown(server: McpServer, options: ServeOptions): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  try {
    await options.onShutdown?.();
    await server.close();
  } finally {
    process.exit(0);
  }
}
