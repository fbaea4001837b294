#!/usr/bin/env node
/**
 * A test server written with SDK v2 (@modelcontextprotocol/server) that serves the 2026-07-28 era and, for
 * older clients, the 2025 one: over stdio (serveStdio) or, with `--http host:port`, Streamable HTTP
 * (createMcpHandler; prints `listening <url>`). Its tools: `echo`; `confirm`, which asks the person a question
 * (an `input_required` result in the modern era, which the SDK turns into `elicitation/create` for a 2025
 * client) and says what they answered (or that they declined); `grow`, which adds the tool `extra` and announces the list change
 * (on a `subscriptions/listen` stream in the modern era). And the 2025-era features under the fault and sampling
 * servers' names, written the v2 way: `slow` (answers after `ms`, with progress on the way), `log` (an MCP log
 * message, sent only at the level the client asked for), `hang` (never answers; counts the cancellations it
 * sees), `stats`, `ask_model` (asks the client's model: an `input_required` sampling request) and `roots`
 * (asks the client's roots: an `input_required` roots request).
 */
import { fileURLToPath } from "node:url";
import { serve as serveHttp } from "@hono/node-server";
import {
  McpServer,
  acceptedContent,
  createMcpHandler,
  inputRequired,
  inputResponse,
} from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { z } from "zod";

const text = (value: unknown) => ({
  content: [{ type: "text" as const, text: typeof value === "string" ? value : JSON.stringify(value) }],
});

const Confirmation = z.object({ ok: z.boolean(), note: z.string().optional() });

/** Counted across every server instance of the process (one per request over HTTP). */
const counts = { calls: 0, cancellations: 0 };

/** One server instance (per connection over stdio, per request over HTTP); `grown` is shared across them. */
export function createModernServer(
  state: { grown: boolean },
  announce: (server: McpServer) => void,
): McpServer {
  const server = new McpServer(
    { name: "pda-modern-test", version: "2.0.0" },
    { capabilities: { tools: { listChanged: true }, logging: {} } },
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
      const reply = inputResponse(ctx.mcpReq.inputResponses, "confirm");
      // A person who declines is not asked again: the answer says so.
      if (reply.kind === "elicit" && reply.action !== "accept") {
        return text({ action, confirmed: false, answer: reply.action });
      }
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
  addFeatureTools(server);
  if (state.grown) addExtra(server);
  return server;
}

/** Progress, logging, cancellation, sampling and roots: the fault and sampling servers' tools, in SDK v2. */
function addFeatureTools(server: McpServer): void {
  server.registerTool(
    "slow",
    {
      description: "Answer after ms milliseconds, with progress notifications on the way.",
      inputSchema: z.object({ ms: z.number().int().min(0), steps: z.number().int().min(1).default(4) }),
    },
    async ({ ms, steps }, ctx) => {
      const token = ctx.mcpReq._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        await new Promise((r) => setTimeout(r, ms / steps));
        if (ctx.mcpReq.signal.aborted) throw new Error("cancelled");
        if (token !== undefined) {
          await ctx.mcpReq.notify({
            method: "notifications/progress",
            params: { progressToken: token, progress: i, total: steps, message: `step ${i} of ${steps}` },
          });
        }
      }
      counts.calls++;
      return text({ waited: ms });
    },
  );
  server.registerTool(
    "log",
    {
      description: "Send an MCP log message.",
      inputSchema: z.object({ level: z.enum(["debug", "info", "warning", "error"]), message: z.string() }),
    },
    async ({ level, message }, ctx) => {
      await ctx.mcpReq.log(level, message, "modern");
      counts.calls++;
      return text("logged");
    },
  );
  server.registerTool("hang", { description: "Never answer (but notice cancellation)." }, (ctx) => {
    counts.calls++;
    return new Promise<never>(() => {
      ctx.mcpReq.signal.addEventListener("abort", () => counts.cancellations++, { once: true });
    });
  });
  server.registerTool("stats", { description: "Calls answered and cancellations seen." }, () =>
    text({ ...counts }),
  );
  server.registerTool(
    "ask_model",
    {
      description: "Ask the client's model a question (MCP sampling) and return its answer.",
      inputSchema: z.object({ question: z.string() }),
    },
    ({ question }, ctx) => {
      const reply = inputResponse(ctx.mcpReq.inputResponses, "answer");
      if (reply.kind !== "sampling") {
        return inputRequired({
          inputRequests: {
            answer: inputRequired.createMessage({
              messages: [{ role: "user", content: { type: "text", text: question } }],
              systemPrompt: "Answer in one short sentence.",
              maxTokens: 200,
            }),
          },
        });
      }
      const content = Array.isArray(reply.result.content) ? reply.result.content[0] : reply.result.content;
      const said = content?.type === "text" ? content.text : `(${content?.type ?? "no"} content)`;
      return text({ answer: said, model: reply.result.model });
    },
  );
  server.registerTool(
    "roots",
    { description: "The client's roots (their URIs), as it lists them.", inputSchema: z.object({}) },
    (_args, ctx) => {
      const listed = inputResponse(ctx.mcpReq.inputResponses, "roots");
      if (listed.kind !== "roots") {
        return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
      }
      return text(listed.roots.map((r) => r.uri));
    },
  );
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
