#!/usr/bin/env node
/**
 * A test server written with SDK v2 (@modelcontextprotocol/server) that serves the 2026-07-28 era and, for
 * older clients, the 2025 one: over stdio (serveStdio) or, with `--http host:port`, Streamable HTTP
 * (createMcpHandler; prints `listening <url>`). Its tools: `echo`; `confirm`, which asks the person a question
 * (an `input_required` result in the modern era, which the SDK turns into `elicitation/create` for a 2025
 * client) and says what they answered; `grow`, which adds the tool `extra` and announces the list change
 * (on a `subscriptions/listen` stream in the modern era).
 */
import { fileURLToPath } from "node:url";
import { serve as serveHttp } from "@hono/node-server";
import { McpServer, acceptedContent, createMcpHandler, inputRequired } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { z } from "zod";

const text = (value: unknown) => ({
  content: [{ type: "text" as const, text: typeof value === "string" ? value : JSON.stringify(value) }],
});

const Confirmation = z.object({ ok: z.boolean(), note: z.string().optional() });

/** One server instance (per connection over stdio, per request over HTTP); `grown` is shared across them. */
export function createModernServer(
  state: { grown: boolean },
  announce: (server: McpServer) => void,
): McpServer {
  const server = new McpServer(
    { name: "pda-modern-test", version: "2.0.0" },
    { capabilities: { tools: { listChanged: true } } },
  );
  server.registerTool(
    "echo",
    { description: "Return the text it is given.", inputSchema: z.object({ text: z.string() }) },
    ({ text: t }) => text(t),
  );
  server.registerTool(
    "confirm",
    {
      description: "Ask the person to confirm an action and report their answer.",
      inputSchema: z.object({ action: z.string() }),
    },
    ({ action }, ctx) => {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, "confirm", Confirmation);
      if (!answer) {
        return inputRequired({
          inputRequests: {
            confirm: inputRequired.elicit({
              message: `Go ahead with ${action}?`,
              requestedSchema: Confirmation,
            }),
          },
        });
      }
      return text({ action, confirmed: answer.ok, note: answer.note ?? null });
    },
  );
  server.registerTool(
    "grow",
    { description: "Add the tool `extra` and announce the change.", inputSchema: z.object({}) },
    () => {
      state.grown = true;
      addExtra(server);
      announce(server);
      return text("grown");
    },
  );
  if (state.grown) addExtra(server);
  return server;
}

function addExtra(server: McpServer): void {
  try {
    server.registerTool(
      "extra",
      { description: "A tool that appeared after `grow`.", inputSchema: z.object({}) },
      () => text("extra here"),
    );
  } catch {
    // registered already
  }
}

async function main(): Promise<void> {
  const state = { grown: false };
  const at = process.argv.indexOf("--http");
  if (at === -1) {
    serveStdio(() => createModernServer(state, (server) => server.sendToolListChanged()));
    return;
  }
  const [host, port] = (process.argv[at + 1] ?? "127.0.0.1:0").split(":");
  const handler = createMcpHandler(() => createModernServer(state, () => handler.notify.toolsChanged()));
  serveHttp({ fetch: (request) => handler.fetch(request), hostname: host, port: Number(port) }, (info) => {
    console.log(`listening http://${host}:${info.port}/mcp`);
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) void main();
