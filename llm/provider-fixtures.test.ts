/**
 * The documented response and error bodies of the OpenAI and Gemini APIs (testing/fixtures/), served byte for
 * byte to the real `openai` and `@google/genai` clients: what pda reads from them is what the services send.
 */
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { PACKAGE_ROOT, modelJsonSchema, type RawTurn } from "../core/index.js";
import { FakeClock } from "../testing/index.js";
import { createTransport } from "./index.js";

const FIXTURES = join(PACKAGE_ROOT, "testing", "fixtures");
const fixture = (path: string) => readFileSync(join(FIXTURES, path), "utf8");
const errorBody = (service: string, status: number) =>
  JSON.stringify((JSON.parse(fixture(`${service}/errors.json`)) as Record<string, unknown>)[String(status)]);

/** A server that answers each request with the next [status, body], as they are. */
async function replay(replies: Array<[number, string]>) {
  const paths: string[] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      paths.push(`${req.method} ${req.url}`);
      const [status, body] = replies[paths.length - 1] ?? [500, "{}"];
      res.writeHead(status, { "content-type": "application/json" });
      res.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  servers.push(server);
  return { url, paths };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

const turn: RawTurn = {
  role: "decision",
  system: "Store the reading.",
  prompt: "Record the reading: 21.5 degrees in Lisbon.",
  jsonSchema: modelJsonSchema(z.object({ city: z.string(), celsius: z.number() })),
  schemaName: "Reading",
  call: { max_output_tokens: 1000 },
};
const noRetry = { max_retries: 0, base_delay_ms: 1, max_delay_ms: 1, max_server_delay_ms: 60_000 };

describe("OpenAI chat completions fixtures", () => {
  it("an answer, a reasoning model cut off by its cap, a refusal, a 400 and a 429", async () => {
    const { url } = await replay([
      [200, fixture("openai/response-json.json")],
      [200, fixture("openai/response-length.json")],
      [200, fixture("openai/response-refusal.json")],
      [400, errorBody("openai", 400)],
      [429, errorBody("openai", 429)],
    ]);
    const t = createTransport("openai:gpt-4o-mini", {
      env: { OPENAI_BASE_URL: `${url}/v1` },
      retry: noRetry,
    });
    const out = await t.complete(turn);
    expect(JSON.parse(out.text)).toEqual({ city: "Lisbon", celsius: 21.5 });
    expect(out.usage).toEqual({ input_tokens: 64, output_tokens: 12 });
    await expect(t.complete(turn)).rejects.toMatchObject({
      code: "MODEL_TRUNCATED",
      usage: { input_tokens: 80, output_tokens: 1000 },
    });
    await expect(t.complete(turn)).rejects.toMatchObject({
      code: "MODEL_BLOCKED",
      message: expect.stringMatching(/refused: I can't help with that request\./),
    });
    await expect(t.complete(turn)).rejects.toMatchObject({
      code: "MODEL_HTTP",
      message: expect.stringMatching(
        /HTTP 400: Unsupported parameter: 'max_tokens' is not supported with this model/,
      ),
    });
    await expect(t.complete(turn)).rejects.toMatchObject({
      code: "MODEL_RATE_LIMITED",
      message: expect.stringMatching(/HTTP 429: Rate limit reached for requests per min/),
    });
  });
});

describe("Gemini generateContent fixtures", () => {
  const env = (url: string) => ({ GEMINI_API_KEY: "k", GEMINI_BASE_URL: url });

  it("an answer after thoughts: the thoughts are not the answer, their tokens are output", async () => {
    const { url, paths } = await replay([[200, fixture("gemini/response-json.json")]]);
    const out = await createTransport("gemini:gemini-2.5-flash", { env: env(url) }).complete(turn);
    expect(JSON.parse(out.text)).toEqual({ city: "Lisbon", celsius: 21.5 });
    expect(out.usage).toEqual({ input_tokens: 58, output_tokens: 14 + 40 });
    expect(paths).toEqual(["POST /v1beta/models/gemini-2.5-flash:generateContent"]);
  });

  it("MAX_TOKENS with no answer is asked again with a larger cap; a blocked prompt is MODEL_BLOCKED", async () => {
    const { url } = await replay([
      [200, fixture("gemini/response-max-tokens.json")],
      [200, fixture("gemini/response-json.json")],
      [200, fixture("gemini/response-blocked.json")],
    ]);
    const t = createTransport("gemini:gemini-2.5-flash", { env: env(url) });
    const out = await t.complete(turn);
    expect(out.usage).toEqual({ input_tokens: 60 + 58, output_tokens: 1024 + 54 });
    expect(out.retries).toBe(1);
    await expect(t.complete(turn)).rejects.toMatchObject({
      code: "MODEL_BLOCKED",
      usage: { input_tokens: 33, output_tokens: 0 },
    });
  });

  it("a 429 with RetryInfo is waited for as the server asks; a 400 is reported with its message", async () => {
    const { url } = await replay([
      [429, errorBody("gemini", 429)],
      [200, fixture("gemini/response-json.json")],
      [400, errorBody("gemini", 400)],
    ]);
    const clock = new FakeClock();
    const t = createTransport("gemini:gemini-2.5-flash", { env: env(url), clock });
    expect((await t.complete(turn)).retries).toBe(1);
    expect(clock.sleeps).toEqual([38_000]);
    await expect(t.complete(turn)).rejects.toMatchObject({
      code: "MODEL_HTTP",
      message: expect.stringMatching(
        /HTTP 400 INVALID_ARGUMENT: You can only set only one of thinking budget/,
      ),
    });
  });
});
