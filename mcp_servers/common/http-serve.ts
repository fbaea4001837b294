/**
 * What both HTTP serve entries (serve-http.ts for the v1 test servers, serve-eras-http.ts for the bundled
 * ones) do around their MCP handling: JSON-RPC error replies, listening with the address announced on
 * stdout (what the hub and the tests read to find the port), and a clean stop on SIGTERM or SIGINT.
 */
import type { Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ServeOptions } from "./serve-types.js";

/** A JSON-RPC error with no request id (the request was refused before it was read as one). */
export function reply(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
}

/**
 * Listens, prints `listening http://host:port/mcp`, and on SIGTERM or SIGINT closes the MCP servers
 * (`closeServers`), the listener and what the server keeps (`onShutdown`), then exits.
 */
export async function listenUntilSignal(
  http: Server,
  host: string,
  port: number,
  closeServers: () => Promise<void>,
  options: ServeOptions,
): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(port, host, resolve);
  });
  const addr = http.address() as AddressInfo;
  const shown = host.includes(":") ? `[${host}]` : host;
  process.stdout.write(`listening http://${shown}:${addr.port}/mcp\n`);

  const stop = async () => {
    await closeServers();
    http.close();
    await options.onShutdown?.();
    process.exit(0);
  };
  process.once("SIGTERM", () => void stop());
  process.once("SIGINT", () => void stop());
}
