/**
 * A real redis-server for queue tests and the bench: on a free loopback port, in a temporary folder, no
 * persistence; stopped (and its folder removed) by `stop()`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestRedis {
  url: string;
  port: number;
  proc: ChildProcess;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export async function startRedis(bin = process.env.REDIS_SERVER ?? "redis-server"): Promise<TestRedis> {
  const dir = mkdtempSync(join(tmpdir(), "pda-redis-"));
  const port = await freePort();
  const proc = spawn(
    bin,
    ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let log = "";
  const exited = new Promise<void>((resolve) => proc.on("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start in 30 s:\n${log}`)), 30_000);
    proc.on("error", (e) => {
      clearTimeout(timer);
      reject(
        new Error(
          `redis-server could not be started (${bin}): ${e.message}; install it (apt-get install redis-server)`,
        ),
      );
    });
    proc.stdout!.on("data", (d: Buffer) => {
      log += d.toString();
      if (/Ready to accept connections/.test(log)) {
        clearTimeout(timer);
        resolve();
      }
    });
    proc.stderr!.on("data", (d: Buffer) => (log += d.toString()));
  });
  return {
    url: `redis://127.0.0.1:${port}/0`,
    port,
    proc,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
