/**
 * Where the hub keeps servers' tool lists between runs, so it knows every server's tools without starting it
 * (mcp_servers/hub starts a server at the first call of one of its tools). The hub computes the key from what
 * defines the server; memory/ stores the lists. The hub does not import memory/: this interface is all it sees.
 */
import { z } from "zod";

/** One server's tools as it listed them (before allow/deny), with the name and version it reported. */
export const CachedToolList = z.object({
  server_name: z.string().optional(),
  server_version: z.string().optional(),
  /** The protocol era the server spoke (`legacy`: 2025 initialize, `modern`: 2026-07-28+), so `auto` need not probe. */
  era: z.enum(["legacy", "modern"]).optional(),
  /** A modern server's `server/discover` result, which lets the next connect skip the probe round trip. */
  discover: z.looseObject({}).optional(),
  /** MCP Tool objects: name, description, inputSchema, outputSchema, annotations, ... */
  tools: z.array(z.looseObject({ name: z.string() })),
});
export type CachedToolList = z.infer<typeof CachedToolList>;

export interface ToolListCache {
  /** The list stored under `key`, if any (a broken entry reads as none). */
  get(key: string): CachedToolList | undefined;
  /** Store (or replace) the list of server `server` under `key`. Must not throw: the cache is an optimisation. */
  put(key: string, server: string, list: CachedToolList): void;
}
