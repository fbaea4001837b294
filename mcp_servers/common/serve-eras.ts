/**
 * Runs a bundled MCP server over stdio (the default) or, with `--http [host:]port`, over Streamable HTTP
 * (serve-eras-http.ts, loaded only then: it brings node:http and the HTTP entry, which a stdio server must not pay
 * for at start). Both serve both protocol eras through the SDK v2 entries: the 2025 era (`initialize`, what a
 * v1 client speaks) and the 2026-07-28 revision (`server/discover`, a `_meta` envelope on every request).
 */
import { serveStdio, type StdioServerHandle } from "@modelcontextprotocol/server/stdio";
import { factoryOf, type CreateServer, type ServeOptions } from "./serve-types.js";

export type { CreateServer, Era, ServeOptions } from "./serve-types.js";

export async function serveEras(
  create: CreateServer,
  argv: string[] = process.argv.slice(2),
  options: ServeOptions = {},
): Promise<void> {
  const i = argv.indexOf("--http");
  if (i === -1) {
    // The opening message picks the era; one instance is pinned to the connection.
    const handle = serveStdio(factoryOf(create), {
      onerror: (e) => process.stderr.write(`mcp: ${e.message}\n`),
    });
    // The client closing our stdin is the normal way to be told to stop.
    process.stdin.on("end", () => void shutdown(handle, options));
    process.stdin.on("close", () => void shutdown(handle, options));
    return;
  }
  const { serveHttpFromArgs } = await import("./serve-eras-http.js");
  await serveHttpFromArgs(create, argv[i + 1] ?? "127.0.0.1:0", argv, options);
}

let shuttingDown = false;
async function shutdown(handle: StdioServerHandle, options: ServeOptions): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  try {
    await options.onShutdown?.();
    await handle.close();
  } finally {
    process.exit(0);
  }
}
