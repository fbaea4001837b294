/**
 * A shop for durable-step tests: the ledger server (a real stdio MCP server that writes down every call it
 * receives, mcp_servers/testing) behind a real hub, and a real SQLite store, in a temp folder.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PACKAGE_ROOT } from "../../core/index.js";
import { MultiMCP } from "../../mcp_servers/index.js";
import { SessionStore } from "../../memory/index.js";

/** A call the server received, as it wrote it down. */
export interface LedgerLine {
  tool: string;
  id?: number;
  key?: string;
}

export interface Shop {
  dir: string;
  hub: MultiMCP;
  store: SessionStore;
  /** Every call the server received, in order. */
  received(): LedgerLine[];
  /** Forget the calls received so far. */
  clear(): void;
  close(): Promise<void>;
}

export async function openShop(
  prefix: string,
  opts: { delayMs: number; needsApproval: string[] },
): Promise<Shop> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const ledger = join(dir, "ledger.jsonl");
  const hub = await MultiMCP.start({
    servers: [
      {
        id: "shop",
        command: process.execPath,
        args: [join(PACKAGE_ROOT, "dist/mcp_servers/testing/ledger_server.js")],
        env: { LEDGER_FILE: ledger, LEDGER_DELAY_MS: String(opts.delayMs) },
        needs_approval: opts.needsApproval,
      },
    ],
  });
  const store = SessionStore.open(join(dir, "pda.db"));
  return {
    dir,
    hub,
    store,
    received: () =>
      existsSync(ledger)
        ? readFileSync(ledger, "utf8")
            .split("\n")
            .filter(Boolean)
            .map((l) => JSON.parse(l) as LedgerLine)
        : [],
    clear: () => rmSync(ledger, { force: true }),
    async close() {
      await hub.close();
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
