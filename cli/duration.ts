/** The one duration syntax of every timeout-like flag: `90s`, `2m`, `1500ms`, `1h`, or plain milliseconds. */
import { ConfigError } from "../core/index.js";

const UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/** `text` in milliseconds; a ConfigError (exit 2) naming `what` (the flag) for anything else, or for zero. */
export function parseDurationMs(text: string, what: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new ConfigError(`${what} ${text}: expected a duration like 30s, 2m, 500ms or 1500 (ms)`);
  const ms = Math.round(Number(m[1]) * UNITS[(m[2] ?? "ms") as keyof typeof UNITS]);
  if (ms <= 0) throw new ConfigError(`${what} ${text}: must be more than zero`);
  return ms;
}
