/**
 * A model that cannot be reached, through the real CLI: every provider retries a refused connection, then
 * exits 3 naming the variable to check; with no model at all the message starts with the demo that needs
 * none, and no failed session is left behind.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { DEFAULT_CONFIG_DIR } from "../core/index.js";
import { cliFolder, type CliFolder } from "./harness.js";

let cli: CliFolder;
beforeEach(() => {
  cli = cliFolder("pda-model-errors-");
  // The bundled models.yaml with short retries, and a local default that cannot be fetched (.invalid never resolves).
  const models = parse(readFileSync(join(DEFAULT_CONFIG_DIR, "models.yaml"), "utf8")) as Record<string, any>;
  models.retry = { max_retries: 2, base_delay_ms: 5, max_delay_ms: 10, max_server_delay_ms: 100 };
  models.local_default.url = "http://models.invalid/qwen.gguf";
  writeFileSync(join(cli.config, "models.yaml"), stringify(models));
});
afterEach(() => cli.close());

/** A local address nobody listens on: a port taken and released. */
async function refusedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

const noStack = (stderr: string) => expect(stderr).not.toMatch(/^\s+at /m);

describe("unreachable models", () => {
  it("gemini at a GEMINI_BASE_URL that refuses: retried, exit 3, names GEMINI_BASE_URL", async () => {
    const r = await cli.pda(["run", "What is 2 + 3"], undefined, {
      GEMINI_API_KEY: "k",
      GEMINI_BASE_URL: await refusedUrl(),
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/cannot connect \(ECONNREFUSED\); check GEMINI_BASE_URL/);
    expect(r.stderr).toMatch(/gave up after 3 tries/);
    noStack(r.stderr);
  });

  it("openai at an OPENAI_BASE_URL that refuses: retried the same way, exit 3, names OPENAI_BASE_URL", async () => {
    const r = await cli.pda(["run", "What is 2 + 3", "--model", "openai:m"], undefined, {
      OPENAI_BASE_URL: `${await refusedUrl()}/v1`,
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/cannot connect \(ECONNREFUSED\); check OPENAI_BASE_URL/);
    expect(r.stderr).toMatch(/gave up after 3 tries/);
    noStack(r.stderr);
  });

  it("no model at all: a short message starting with the demo, exit 3, and no failed session", async () => {
    const r = await cli.pda(["run", "What is 2 + 3"]);
    expect(r.code).toBe(3);
    const lines = r.stderr.trim().split("\n");
    expect(lines[0]).toMatch(/^error no model available/);
    expect(lines[1]).toMatch(/^ {2}pda run ".*" --model scripted:.*config\/demo\/calculator\.yaml$/);
    expect(lines.length).toBeGreaterThan(3);
    // The name did not resolve: not retried (offline, the answer comes at once).
    expect(r.stderr).toMatch(/cannot connect \((ENOTFOUND|EAI_AGAIN)\)/);
    noStack(r.stderr);
    const sessions = await cli.pda(["sessions", "--json"]);
    expect(JSON.parse(sessions.stdout)).toEqual([]);
  });

  it("the demo the message names runs without a model", async () => {
    const r = await cli.pda(["run", "What is 32 + 5 - 3 * 2"]);
    const demo = /--model (scripted:\S+)/.exec(r.stderr)![1]!;
    const ok = await cli.pda(["run", "What is 32 + 5 - 3 * 2", "--model", demo]);
    expect(ok.stderr).toMatch(/^answer$/m);
    expect(ok.stdout).toBe("32 + 5 - 3 * 2 = 31\n");
    expect(ok.code).toBe(0);
  });
});
