/**
 * The sandbox against real MCP servers over stdio through MultiMCP: the bundled math server (compiled, from
 * dist/) and the reference "everything" server from node_modules (no npx, no network).
 */
import { createRequire } from "node:module";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT, distPath } from "../../core/index.js";
import { MultiMCP } from "../../mcp_servers/index.js";
import { runCode } from "../index.js";
import { limits } from "./helpers.js";

function everythingBin(): string {
  const require = createRequire(join(PACKAGE_ROOT, "package.json"));
  const manifest = require("@modelcontextprotocol/server-everything/package.json") as {
    bin: Record<string, string>;
  };
  return join(
    PACKAGE_ROOT,
    "node_modules/@modelcontextprotocol/server-everything",
    Object.values(manifest.bin)[0]!,
  );
}

let hub: MultiMCP;

beforeAll(async () => {
  hub = await MultiMCP.start({
    servers: [
      { id: "math", command: process.execPath, args: [distPath("mcp_servers/math/server.js")] },
      { id: "everything", command: process.execPath, args: [everythingBin(), "stdio"] },
    ],
  });
  expect(hub.status().map((s) => s.state)).toEqual(["ready", "ready"]);
});

afterAll(async () => {
  await hub.close();
});

describe("the sandbox over real MCP servers", () => {
  it("computes 32 + 5 - 3 * 2 with the math server's tools and records each call", async () => {
    const r = await runCode(
      "const product = await multiply(3, 2);\nconst sum = await math.add({ a: 32, b: 5 });\nreturn subtract(sum, product)",
      hub,
      limits(),
    );
    expect(r.error).toBeUndefined();
    expect(r.value).toBe(31);
    expect(r.tool_calls.map((c) => `${c.server}.${c.tool}:${c.ok}`)).toEqual([
      "math.multiply:true",
      "math.add:true",
      "math.subtract:true",
    ]);
  });

  it("turns an isError result into a ToolError the code catches, or the step's error when it does not", async () => {
    const caught = await runCode(
      "try { await divide(1, 0) } catch (e) { return [e instanceof ToolError, e.code, e.tool] }",
      hub,
      limits(),
    );
    expect(caught.value).toEqual([true, "TOOL_ERROR", "math.divide"]);
    const uncaught = await runCode("return await factorial(-1)", hub, limits());
    expect(uncaught.error).toMatchObject({ code: "TOOL_ERROR", tool: "math.factorial" });
  });

  it("binds names that are not identifiers, validates enums naming the field, honours defaults", async () => {
    const r = await runCode(
      "const a = await everything['get-sum'](2, 3);\nconst b = await get_sum({ a: 4, b: 5 });\nconst s = await everything['get-structured-content']('Chicago');\nreturn [a, b, typeof s]",
      hub,
      limits(),
    );
    expect(r.error).toBeUndefined();
    const [a, b, s] = r.value as [unknown, unknown, string];
    expect(JSON.stringify(a)).toContain("5");
    expect(JSON.stringify(b)).toContain("9");
    expect(s).toBe("object");

    const bad = await runCode("return everything['get-structured-content']('Paris')", hub, limits());
    expect(bad.error?.code).toBe("TOOL_INVALID_ARGS");
    expect(bad.error?.message).toContain(
      'argument "location" must be one of "New York", "Chicago", "Los Angeles"',
    );
  });

  it("passes non-text content (an image) through as data", async () => {
    const r = await runCode(
      "const img = await everything['get-tiny-image']();\nreturn img.filter(c => c.type === 'image').map(c => [c.mimeType, typeof c.data])",
      hub,
      limits(),
    );
    expect(r.error).toBeUndefined();
    expect(r.value).toEqual([["image/png", "string"]]);
  });

  it("runs calls concurrently with parallel()", async () => {
    const r = await runCode("return parallel([1, 2, 3, 4].map(n => () => multiply(n, n)))", hub, limits());
    expect(r.value).toEqual([1, 4, 9, 16]);
    expect(r.tool_calls).toHaveLength(4);
  });

  it("times out a step whose tool call runs too long, cancels the call, and the server keeps answering", async () => {
    const r = await runCode(
      "return everything['trigger-long-running-operation']({ duration: 20, steps: 2 })",
      hub,
      limits({ timeout_ms: 500 }),
    );
    expect(r.error?.code).toBe("SANDBOX_TIMEOUT");
    expect(r.tool_calls).toMatchObject([{ server: "everything", ok: false, error_kind: "TOOL_CANCELLED" }]);
    const next = await runCode("return get_sum(1, 1)", hub, limits());
    expect(next.ok).toBe(true);
  });
});
