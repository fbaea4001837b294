/**
 * Files in the output folder, each written whole to a temporary file and renamed into place, so a crash
 * at any moment leaves the previous complete version, never half a file.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "csv-stringify/sync";
import { ConfigError } from "../core/index.js";
import { BatchState, STATE_FILE } from "./schemas.js";

export function writeAtomic(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

export function writeCsv(
  path: string,
  columns: readonly string[],
  rows: Array<Record<string, string>>,
): void {
  writeAtomic(path, stringify(rows, { header: true, columns: [...columns] }));
}

export function statePath(dir: string): string {
  return join(dir, STATE_FILE);
}

/** The state of the run in `dir`, or null when the folder holds none. Throws ConfigError when unreadable. */
export function readBatchState(dir: string): BatchState | null {
  const p = statePath(dir);
  if (!existsSync(p)) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(p, "utf8"));
  } catch (e) {
    throw new ConfigError(`${p}: not valid JSON (${(e as Error).message}); remove it or use --force`, {
      cause: e,
      code: "BATCH_STATE",
    });
  }
  const parsed = BatchState.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(
      `${p}: ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}; remove it or use --force`,
      { code: "BATCH_STATE" },
    );
  }
  return parsed.data;
}

export function writeBatchState(dir: string, state: BatchState): void {
  writeAtomic(statePath(dir), `${JSON.stringify(state, null, 2)}\n`);
}
