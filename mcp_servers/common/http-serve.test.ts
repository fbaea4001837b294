import { spawnSync } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { listenAddress } from "./http-serve.js";

describe("listenAddress (--http)", () => {
  it("reads host:port, [v6]:port, :port and a bare port; loopback by default", () => {
    expect(listenAddress("0.0.0.0:8080")).toEqual({ host: "0.0.0.0", port: 8080 });
    expect(listenAddress("[::1]:9000")).toEqual({ host: "::1", port: 9000 });
    expect(listenAddress(":7000")).toEqual({ host: "127.0.0.1", port: 7000 });
    expect(listenAddress("0")).toEqual({ host: "127.0.0.1", port: 0 });
  });

  it("refuses a spec with no port in it, naming it", () => {
    for (const bad of ["abc", "localhost", "host:", "host:99999", "1.5", ""]) {
      expect(() => listenAddress(bad), bad).toThrow(
        `--http ${bad}: expected host:port, [v6]:port or a port number (0-65535)`,
      );
    }
  });
});

describe("a bundled server that cannot serve over HTTP", () => {
  const server = join(import.meta.dirname, "..", "..", "dist", "mcp_servers", "math", "server.js");
  const run = (args: string[]) =>
    spawnSync(process.execPath, [server, ...args], { encoding: "utf8", timeout: 30_000 });

  it("says so in one line: a bad --http exits 2, a port in use 1", async () => {
    const bad = run(["--http", "abc"]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe("mcp: --http abc: expected host:port, [v6]:port or a port number (0-65535)\n");

    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = taken.address() as AddressInfo;
      const busy = run(["--http", `127.0.0.1:${port}`]);
      expect(busy.status).toBe(1);
      expect(busy.stderr).toMatch(
        new RegExp(`^mcp: cannot serve over HTTP: listen EADDRINUSE.*:${port}\\n$`),
      );
    } finally {
      taken.close();
    }
  });
});
