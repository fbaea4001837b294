#!/usr/bin/env node
/**
 * A deliberately broken MCP server for fault tests. Start-up modes (argv):
 *   --exit-at-start      exits with code 3 before speaking MCP
 *   --garbage-only       writes non-JSON lines to stdout forever and never answers
 *   --banner             prints a non-JSON banner on stdout, then works normally
 *   --fast               slow answers at once (the same code, run again by a resumed session, finishes)
 * Tools: echo, crash (exits mid-call), hang (never answers; counts cancellations), spin (busy loop, the
 * process stops answering anything), garbage (writes junk to stdout, never answers), slow (answers after
 * `ms`, sending progress), log (an MCP log message), ask (an elicitation request), grow (adds a tool at
 * run time), stats (calls, cancellations seen by hang, cancellation notices read), pid.
 */
import { fileURLToPath } from "node:url";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { serve } from "../common/serve.js";

let cancellations = 0;
let calls = 0;
/** notifications/cancelled lines read from stdin, whatever request they name (finished ones included). */
let cancelNotices = 0;

const text = (value: unknown) => ({ content: [{ type: "text" as const, text: JSON.stringify(value) }] });

export function createFaultServer(): McpServer {
  const server = new McpServer({ name: "pda-fault", version: "0.1.0" }, { capabilities: { logging: {} } });
  const count = <T>(fn: T) => {
    calls++;
    return fn;
  };
  server.registerTool(
    "echo",
    { description: "Echo the text back.", inputSchema: { text: z.string() } },
    ({ text: t }) => count(text(t)),
  );
  server.registerTool("pid", { description: "The server's process id." }, () => count(text(process.pid)));
  server.registerTool("crash", { description: "Exit the process in the middle of the call." }, () => {
    process.stderr.write("fault server: crashing on purpose\n");
    process.exit(7);
  });
  server.registerTool("hang", { description: "Never answer (but notice cancellation)." }, (extra) =>
    count(
      new Promise<never>(() => {
        extra.signal.addEventListener("abort", () => cancellations++, { once: true });
      }),
    ),
  );
  server.registerTool("spin", { description: "Busy-loop forever: the process stops answering." }, () => {
    for (;;) {
      // wedged on purpose
    }
  });
  server.registerTool("garbage", { description: "Write junk to stdout and never answer." }, () => {
    process.stdout.write('this is not json\n{"half": \n\u0000\u0001binary\n[1,2,3]\n');
    return count(new Promise<never>(() => {}));
  });
  server.registerTool(
    "slow",
    {
      description: "Answer after ms milliseconds, with progress notifications on the way.",
      inputSchema: { ms: z.number().int().min(0), steps: z.number().int().min(1).default(4) },
    },
    async ({ ms, steps }, extra) => {
      if (process.argv.includes("--fast")) return count(text({ waited: ms }));
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        await new Promise((r) => setTimeout(r, ms / steps));
        if (extra.signal.aborted) throw new Error("cancelled");
        if (token !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: i, total: steps, message: `step ${i} of ${steps}` },
          });
        }
      }
      return count(text({ waited: ms }));
    },
  );
  server.registerTool(
    "log",
    {
      description: "Send an MCP log message.",
      inputSchema: { level: z.enum(["debug", "info", "warning", "error"]), message: z.string() },
    },
    async ({ level, message }) => {
      await server.sendLoggingMessage({ level, logger: "fault", data: message });
      return count(text("logged"));
    },
  );
  server.registerTool(
    "ask",
    { description: "Ask the client's human a question (elicitation).", inputSchema: { message: z.string() } },
    async ({ message }) => {
      const answer = await server.server.elicitInput({
        message,
        requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
      });
      return count(text(answer));
    },
  );
  server.registerTool(
    "settings",
    { description: "Ask for settings in a form whose fields have defaults (elicitation)." },
    async () => {
      const answer = await server.server.elicitInput({
        message: "Settings?",
        requestedSchema: {
          type: "object",
          properties: {
            colour: { type: "string", default: "blue" },
            size: { type: "integer", default: 3 },
            note: { type: "string" },
          },
          required: ["colour"],
        },
      });
      return count(text(answer));
    },
  );
  server.registerTool(
    "grow",
    { description: "Add a tool named `grown` (the client is told the list changed)." },
    () => {
      server.registerTool("grown", { description: "A tool added at run time." }, () => text("grown"));
      return count(text("grew"));
    },
  );
  server.registerTool("stats", { description: "Calls answered and cancellations seen." }, () =>
    text({ calls, cancellations, cancel_notices: cancelNotices }),
  );
  return server;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  if (argv.includes("--exit-at-start")) {
    process.stderr.write("fault server: refusing to start\n");
    process.exit(3);
  }
  if (argv.includes("--garbage-only")) {
    setInterval(() => process.stdout.write("garbage garbage garbage\n"), 50);
  } else {
    if (argv.includes("--banner")) process.stdout.write("Fault server v0 starting (a banner on stdout)\n");
    let tail = "";
    process.stdin.on("data", (chunk: Buffer) => {
      const lines = (tail + chunk.toString("utf8")).split("\n");
      tail = lines.pop() ?? "";
      for (const line of lines) if (line.includes('"notifications/cancelled"')) cancelNotices++;
    });
    await serve(createFaultServer, argv);
  }
}
