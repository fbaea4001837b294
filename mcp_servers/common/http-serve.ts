/**
 * What both HTTP serve entries (serve-http.ts for the v1 test servers, serve-eras-http.ts for the bundled
 * ones) do around their MCP handling: JSON-RPC error replies, listening with the address announced on
 * stdout (what the hub and the tests read to find the port), and a clean stop on SIGTERM or SIGINT.
 */
import type { Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ServeOptions } from "./serve-types.js";

/** An `--http` value with no port in it. */
export class HttpSpecError extends Error {
  override name = "HttpSpecError";
}

/**
 * Runs an HTTP entry. What keeps it from serving (a bad `--http`, a port in use) ends the process with one
 * line on stderr, not a stack: exit 2 for the bad value, 1 for the rest.
 */
export async function serveOrExit(run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (e) {
    const bad = e instanceof HttpSpecError;
    process.stderr.write(`mcp: ${bad ? "" : "cannot serve over HTTP: "}${(e as Error).message}\n`);
    process.exit(bad ? 2 : 1);
  }
}

/**
 * Where to listen, from `host:port`, `[v6]:port`, `:port` or a bare port (both on 127.0.0.1); port 0 takes a
 * free one. Throws, naming the spec, when there is no port in it.
 */
export function listenAddress(spec: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(spec);
  const port = Number(m ? m[3] : /^\d+$/.test(spec) ? spec : NaN);
  if (!Number.isInteger(port) || port > 65535) {
    throw new HttpSpecError(`--http ${spec}: expected host:port, [v6]:port or a port number (0-65535)`);
  }
  return { host: m ? (m[1] ?? m[2]) || "127.0.0.1" : "127.0.0.1", port };
}

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
