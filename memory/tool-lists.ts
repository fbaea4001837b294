/** The hub's tool-list cache (core ToolListCache) in the store's tool_lists table. */
import type Database from "better-sqlite3";
import { CachedToolList, type ToolListCache } from "../core/index.js";
import { stmt } from "./sql.js";

interface Row {
  server_name: string | null;
  server_version: string | null;
  tools_json: string;
  era: string | null;
  discover_json: string | null;
}

export function toolListCache(db: Database.Database, now: () => string): ToolListCache {
  return {
    get(key) {
      try {
        const row = stmt<Row>(
          db,
          "SELECT server_name, server_version, tools_json, era, discover_json FROM tool_lists WHERE key = ?",
        ).get(key);
        if (!row) return undefined;
        const parsed = CachedToolList.safeParse({
          ...(row.server_name !== null && { server_name: row.server_name }),
          ...(row.server_version !== null && { server_version: row.server_version }),
          tools: JSON.parse(row.tools_json),
          ...(row.era !== null && { era: row.era }),
          ...(row.discover_json !== null && { discover: JSON.parse(row.discover_json) }),
        });
        // A row this version cannot read is as good as none: the server is started and the row replaced.
        return parsed.success ? parsed.data : undefined;
      } catch {
        return undefined;
      }
    },
    put(key, server, list) {
      try {
        stmt(
          db,
          `INSERT INTO tool_lists (key, server, server_name, server_version, tools_json, era, discover_json,
             updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT(key) DO UPDATE SET server = excluded.server, server_name = excluded.server_name,
             server_version = excluded.server_version, tools_json = excluded.tools_json, era = excluded.era,
             discover_json = excluded.discover_json, updated_at = excluded.updated_at`,
        ).run(
          key,
          server,
          list.server_name ?? null,
          list.server_version ?? null,
          JSON.stringify(list.tools),
          list.era ?? null,
          list.discover === undefined ? null : JSON.stringify(list.discover),
          now(),
        );
      } catch {
        // a busy or read-only store: the list is listed again next time
      }
    },
  };
}
