#!/usr/bin/env node
/**
 * A server with side effects that can be counted, for durable-step tests: every call it receives is appended
 * to the file named by LEDGER_FILE (one JSON line, written before it answers), so a test can tell how many
 * times each call really happened, whatever pda logged or lost.
 * Tools: lookup (read-only), charge (not idempotent: each call is a new charge), set (idempotent).
 * LEDGER_DELAY_MS: how long each call takes after it is written down (default 20).
 */
import { appendFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { serve } from "../common/serve.js";

const text = (value: unknown) => ({ content: [{ type: "text" as const, text: JSON.stringify(value) }] });

export function createLedgerServer(file: string, delayMs: number): McpServer {
  const server = new McpServer({ name: "pda-ledger", version: "0.1.0" });
  const received = async <T>(tool: string, args: Record<string, unknown>, value: T) => {
    appendFileSync(file, JSON.stringify({ tool, ...args }) + "\n");
    await new Promise((r) => setTimeout(r, delayMs));
    return text(value);
  };
  server.registerTool(
    "lookup",
    {
      description: "The value of an item (reads only).",
      inputSchema: { id: z.number().int() },
      annotations: { readOnlyHint: true },
    },
    ({ id }) => received("lookup", { id }, { id, value: id * 7 }),
  );
  server.registerTool(
    "charge",
    {
      description: "Charge an amount (each call is a new charge).",
      inputSchema: {
        id: z.number().int(),
        amount: z.number(),
        nonce: z.number().optional(),
        at: z.number().optional(),
      },
      annotations: { readOnlyHint: false, idempotentHint: false, destructiveHint: false },
    },
    ({ id, amount, nonce, at }) =>
      received("charge", { id, amount, nonce, at }, { receipt: `r-${id}`, amount }),
  );
  server.registerTool(
    "set",
    {
      description: "Set a key to a value (setting it twice is the same as once).",
      inputSchema: { key: z.string(), value: z.number() },
      annotations: { readOnlyHint: false, idempotentHint: true },
    },
    ({ key, value }) => received("set", { key, value }, { key, value }),
  );
  return server;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.env.LEDGER_FILE;
  if (!file) {
    process.stderr.write("ledger server: set LEDGER_FILE to the file that records the calls\n");
    process.exit(2);
  }
  const delay = Number(process.env.LEDGER_DELAY_MS ?? 20);
  await serve(() => createLedgerServer(file, delay));
}
