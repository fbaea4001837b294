/**
 * The baseline for bench/startup.ts: what `pda run` with the scripted calculator demo (or `pda tools`) does at
 * its least, with the plain MCP SDK client (v2, the hub's own generation, and the 2025 handshake the hub uses
 * over stdio): read the scripted model file, spawn the math server, make the same three tool calls (or list the
 * tools), close and wait for the server to exit (so its CPU is counted).
 *   node dist/bench/startup-minimal.js calls|list <model.yaml>
 */
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { parse } from "yaml";
import { distPath } from "../core/index.js";

const [mode = "calls", script] = process.argv.slice(2);
if (script) parse(readFileSync(script, "utf8"));
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [distPath("mcp_servers/math/server.js")],
});
const client = new Client({ name: "startup-minimal", version: "0.1.0" });
await client.connect(transport);
const exited = new Promise<void>((resolve) => {
  const pid = transport.pid;
  const poll = setInterval(() => {
    try {
      if (pid) process.kill(pid, 0);
    } catch {
      clearInterval(poll);
      resolve();
    }
  }, 5);
});
if (mode === "list") {
  await client.listTools();
} else {
  const product = await client.callTool({ name: "multiply", arguments: { a: 3, b: 2 } });
  const sum = await client.callTool({ name: "add", arguments: { a: 32, b: 5 } });
  const value = (r: typeof product) => Number((r.content as Array<{ text: string }>)[0]!.text);
  await client.callTool({ name: "subtract", arguments: { a: value(sum), b: value(product) } });
}
await client.close();
await exited;
