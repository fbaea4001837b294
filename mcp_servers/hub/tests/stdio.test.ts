/**
 * ChildStdioTransport's reading of stdout against a real child process: which lines are messages and which
 * are garbage (the common answer is recognised without the SDK's schema, everything else goes through it),
 * lines split across reads, and the size of a tools/call answer kept for the caller.
 */
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, expect, it } from "vitest";
import { ChildStdioTransport } from "../stdio.js";

const open: ChildStdioTransport[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((t) => t.close()));
});

/** A child that writes each of `writes` to stdout, 30 ms apart (so each is its own read), once stdin has a line. */
async function child(writes: (string | Buffer)[]) {
  const script = `
    const writes = ${JSON.stringify(writes.map((w) => Buffer.from(w).toString("base64")))};
    process.stdin.once("data", async () => {
      for (const w of writes) {
        process.stdout.write(Buffer.from(w, "base64"));
        await new Promise((r) => setTimeout(r, 30));
      }
    });`;
  const messages: JSONRPCMessage[] = [];
  const garbage: string[] = [];
  const transport = new ChildStdioTransport({
    command: process.execPath,
    args: ["-e", script],
    env: { PATH: process.env.PATH ?? "" },
    onGarbage: (line) => garbage.push(line),
  });
  transport.onmessage = (m) => messages.push(m);
  open.push(transport);
  await transport.start();
  const done = new Promise<void>((resolve) => {
    const ready = () =>
      messages.some((m) => "id" in m && m.id === "end") ? resolve() : setTimeout(ready, 10);
    ready();
  });
  return { transport, messages, garbage, done };
}

const END = '{"jsonrpc":"2.0","id":"end","result":{}}\n';

it("passes JSON-RPC messages on and reports every other line as garbage", async () => {
  const { transport, messages, garbage, done } = await child([
    '{"jsonrpc":"2.0","id":1,"result":{"content":[]}}\r\n',
    '{"jsonrpc":"2.0","id":2,"result":[1]}\n',
    '{"jsonrpc":"2.0","id":3,"result":{},"extra":true}\n',
    '{"jsonrpc":"2.0","id":1.5,"result":{}}\n',
    '{"jsonrpc":"1.0","id":4,"result":{}}\n',
    '{"jsonrpc":"2.0","id":5,"result":{"_meta":{"progressToken":"t"},"x":1}}\n',
    '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}\n',
    '{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"no such method"}}\n',
    "[1,2,3]\n   \nnot json\n",
    END,
  ]);
  await transport.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  await done;
  expect(messages).toEqual([
    { jsonrpc: "2.0", id: 1, result: { content: [] } },
    { jsonrpc: "2.0", id: 5, result: { _meta: { progressToken: "t" }, x: 1 } },
    { jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "hi" } },
    { jsonrpc: "2.0", id: 6, error: { code: -32601, message: "no such method" } },
    { jsonrpc: "2.0", id: "end", result: {} },
  ]);
  expect(garbage).toEqual([
    '{"jsonrpc":"2.0","id":2,"result":[1]}',
    '{"jsonrpc":"2.0","id":3,"result":{},"extra":true}',
    '{"jsonrpc":"2.0","id":1.5,"result":{}}',
    '{"jsonrpc":"1.0","id":4,"result":{}}',
    "[1,2,3]",
    "not json",
  ]);
});

it("keeps the size on the wire of a tools/call answer, also when it came in pieces, until taken", async () => {
  const answer = JSON.stringify({
    jsonrpc: "2.0",
    id: 7,
    result: { content: [{ type: "text", text: "héllo ✓ ".repeat(20) }] },
  });
  // Split inside a multi-byte character: the line is decoded whole, and its size counts bytes.
  const cut = Buffer.from(answer).indexOf(Buffer.from("✓")) + 1;
  const bytes = Buffer.from(answer);
  const { transport, messages, done } = await child([
    // An answer to a request that was not a tools/call: its size is not kept.
    '{"jsonrpc":"2.0","id":1,"result":{}}\n',
    bytes.subarray(0, cut),
    Buffer.concat([bytes.subarray(cut), Buffer.from("\n")]),
    END,
  ]);
  const args = {};
  await transport.send({
    jsonrpc: "2.0",
    id: 7,
    method: "tools/call",
    params: { name: "echo", arguments: args },
  });
  // The id goes only to the holder of that very arguments object, and only once.
  expect(transport.takeCallId({})).toBeUndefined();
  expect(transport.takeCallId(args)).toBe(7);
  expect(transport.takeCallId(args)).toBeUndefined();
  await done;
  expect(messages[1]).toEqual(JSON.parse(answer));
  expect(transport.takeBytes(7)).toBe(bytes.length);
  expect(transport.takeBytes(7)).toBeUndefined();
  expect(transport.takeBytes(1)).toBeUndefined();
});
