/**
 * The key a server's cached tool list is stored under: a hash of what defines the server — its command,
 * arguments, env names with a hash of each value, cwd, url, header names with a hash of each value, and the
 * size and modification time of the program and of each argument that is a file (a rebuilt server script may
 * list other tools). Change any of them and the list is listed again. The name and version the server reports
 * are kept with the list and checked each time it starts.
 */
import { createHash } from "node:crypto";
import { statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import type { ServerConfig } from "./config.js";

const hash = (text: string) => createHash("sha256").update(text).digest("hex");
const hashed = (record: Record<string, string>) =>
  Object.entries(record)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => [name, hash(value)]);

/** Size and mtime of a path that is a file (relative paths against the server's cwd), else undefined. */
function fileStamp(path: string, cwd: string | undefined): string | undefined {
  try {
    const abs = isAbsolute(path) ? path : resolve(cwd ?? process.cwd(), path);
    const st = statSync(abs);
    return st.isFile() ? `${st.size}:${st.mtimeMs}` : undefined;
  } catch {
    return undefined;
  }
}

export function toolListKey(c: ServerConfig): string {
  const files = c.command
    ? [c.command, ...c.args].map((p) => (p.includes("/") ? fileStamp(p, c.cwd) : undefined))
    : [];
  return hash(
    JSON.stringify({
      id: c.id,
      command: c.command ?? null,
      args: c.args,
      env: hashed(c.env),
      cwd: c.cwd ?? null,
      url: c.url ?? null,
      transport: c.transport ?? null,
      headers: hashed(c.headers),
      files,
    }),
  );
}
