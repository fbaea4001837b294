import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { bundleServers } from "./bundle.js";
import { MultiMCP } from "./index.js";

let dir: string | undefined;
let hub: MultiMCP | undefined;
afterEach(async () => {
  await hub?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("bundled servers (npm run build)", () => {
  it("a server's bundle holds all it needs: math answers from a folder with no node_modules", async () => {
    dir = mkdtempSync(join(tmpdir(), "pda-bundle-"));
    await bundleServers(dir, ["math"]);
    // Nothing to resolve packages from: every import of the SDK and zod must be inside the bundle.
    expect(readdirSync(dir)).toEqual(["mcp_servers"]);
    hub = await MultiMCP.start({
      servers: [{ id: "math", command: process.execPath, args: [join(dir, "mcp_servers/math/server.js")] }],
    });
    expect(hub.status()[0]).toMatchObject({ state: "ready" });
    expect(await hub.call("math.add", { a: 2, b: 3 })).toBe(5);
  });
});
