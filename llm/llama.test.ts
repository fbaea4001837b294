/**
 * The local GGUF provider through node-llama-cpp with the fixture model (260K parameters, TinyStories): its
 * text is meaningless, but the schema grammar makes every reply JSON of the right shape.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  DecisionOutput,
  ModelError,
  PACKAGE_ROOT,
  PerceptionSnapshot,
  modelJsonSchema,
} from "../core/index.js";
import {
  LlamaTransport,
  ModelOutputError,
  StructuredProvider,
  createModels,
  createProvider,
  grammarSchema,
} from "./index.js";

const FIXTURE = resolve(PACKAGE_ROOT, "../shared/fixtures/models/stories260K.gguf");
const HAVE = existsSync(FIXTURE);
const NAME = HAVE ? "llama provider" : `llama provider — SKIPPED: fixture model not found at ${FIXTURE}`;

const call = { max_output_tokens: 1500, temperature: 0 };
const cache = mkdtempSync(join(tmpdir(), "pda-llama-"));
afterAll(() => rmSync(cache, { recursive: true, force: true }));

describe.skipIf(!HAVE)(NAME, () => {
  const transport = new LlamaTransport({ model: FIXTURE, threads: 1, context_size: 2048 });
  const provider = new StructuredProvider(transport, { call });
  afterAll(() => transport.close());

  it("returns schema-valid PerceptionSnapshots from a meaningless model", async () => {
    for (const prompt of ["Once upon a time", "What is 32 + 5 - 3 * 2?"]) {
      const r = await provider.generate({
        role: "perception",
        system: "You judge the situation.",
        prompt,
        schema: PerceptionSnapshot,
        schemaName: "PerceptionSnapshot",
      });
      expect(PerceptionSnapshot.safeParse(r.value).success).toBe(true);
      expect(r).toMatchObject({ provider: "llama", attempts: 1 });
      // node-llama-cpp's stopReason: the grammar's JSON was complete (an end token, or the grammar's own stop).
      expect(["eogToken", "stopGenerationTrigger"]).toContain(r.finish_reason);
      expect(r.usage.input_tokens).toBeGreaterThan(0);
      expect(r.usage.output_tokens).toBeGreaterThan(10);
    }
  });

  it("holds enums, integer ranges, nested arrays and objects", async () => {
    const Shape = z.object({
      kind: z.enum(["cat", "dog", "bird"]),
      count: z.number().int().min(1).max(5),
      score: z.number().min(-1).max(1),
      ok: z.boolean(),
      tags: z.array(z.object({ name: z.string(), weight: z.number().int().min(0) })).max(3),
    });
    const r = await provider.generate({
      role: "t",
      system: "s",
      prompt: "A cat.",
      schema: Shape,
      schemaName: "Shape",
    });
    expect(Shape.safeParse(r.value).success).toBe(true);
  });

  it("gives DecisionOutput JSON of the right shape; rules the grammar cannot hold go to zod", async () => {
    const raw = await transport.complete({
      role: "decision",
      system: "You plan.",
      prompt: "Once upon a time",
      jsonSchema: modelJsonSchema(DecisionOutput),
      schemaName: "DecisionOutput",
      call,
    });
    const parsed = JSON.parse(raw.text) as Record<string, unknown>;
    expect(Object.keys(parsed).sort()).toEqual(
      ["code", "conclusion", "description", "plan_text", "question", "step_index", "type"].sort(),
    );
    expect(["CODE", "CONCLUDE", "NOP"]).toContain(parsed.type);
    expect(Number.isInteger(parsed.step_index) && (parsed.step_index as number) >= 0).toBe(true);
    expect(Array.isArray(parsed.plan_text) && (parsed.plan_text as unknown[]).length >= 1).toBe(true);
    // Whether step_index falls inside plan_text is a cross-field rule: valid, or the typed error.
    const outcome = await provider
      .generate({
        role: "decision",
        system: "You plan.",
        prompt: "Once upon a time",
        schema: DecisionOutput,
        schemaName: "DecisionOutput",
      })
      .then(
        (r) => DecisionOutput.safeParse(r.value).success,
        (e: unknown) => (e as ModelError).code,
      );
    expect([true, "MODEL_INVALID_OUTPUT"]).toContain(outcome);
  });

  it("reports MAX tokens as MODEL_TRUNCATED", async () => {
    const p = new StructuredProvider(transport, { call: { max_output_tokens: 8 } });
    const e = await p
      .generate({
        role: "perception",
        system: "s",
        prompt: "p",
        schema: PerceptionSnapshot,
        schemaName: "P",
      })
      .catch((x: unknown) => x);
    expect(e).toMatchObject({ code: "MODEL_TRUNCATED", attempts: 1, finish_reason: "maxTokens" });
    // The cut-off reply's tokens were spent all the same (counted by re-tokenizing its text, so up to the limit).
    const { usage } = e as ModelOutputError;
    expect(usage.input_tokens).toBeGreaterThan(0);
    expect(usage.output_tokens).toBeGreaterThan(0);
    expect(usage.output_tokens).toBeLessThanOrEqual(8);
  });

  it("names a missing model file", async () => {
    const p = createProvider("llama:/nope/missing.gguf");
    await expect(
      p.generate({
        role: "perception",
        system: "s",
        prompt: "p",
        schema: PerceptionSnapshot,
        schemaName: "P",
      }),
    ).rejects.toThrow(/\/nope\/missing\.gguf does not exist/);
  });
});

describe.skipIf(!HAVE)(`${NAME}: downloads`, () => {
  const bytes = HAVE ? readFileSync(FIXTURE) : Buffer.alloc(0);
  const sha = createHash("sha256").update(bytes).digest("hex");
  let server: Server;
  let base = "";
  const hits: string[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      hits.push(req.url ?? "");
      if (!req.url?.endsWith(".gguf")) return void res.writeHead(404).end();
      res.writeHead(200, { "content-length": bytes.length, "x-linked-etag": `"${sha}"` });
      res.end(bytes);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("is the default when no key or server is set: downloads once, verifies, then runs (perception and decision share it)", async () => {
    const config = (await import("./index.js")).ModelsFile.parse({
      llama: { threads: 1, context_size: 1024 },
      defaults: { max_output_tokens: 1500 },
      local_default: { url: `${base}/tiny.gguf`, file: "tiny.gguf", sha256: sha, size_bytes: bytes.length },
    });
    const env = { PDA_MODEL_CACHE: join(cache, "default") };
    const models = createModels({ config, env, download: { progress: false } });
    expect(models.describe().map((d) => [d.role, d.spec, d.source.slice(0, 9)])).toEqual([
      ["perception", "llama:", "default: "],
      ["decision", "llama:", "default: "],
    ]);
    const r = await models.generate({
      role: "perception",
      system: "s",
      prompt: "Once",
      schema: PerceptionSnapshot,
      schemaName: "P",
    });
    expect(PerceptionSnapshot.safeParse(r.value).success).toBe(true);
    expect(existsSync(join(cache, "default", "tiny.gguf"))).toBe(true);
    await models.close();
    const again = createModels({ config, env, download: { progress: false } });
    await again.generate({
      role: "perception",
      system: "s",
      prompt: "Twice",
      schema: PerceptionSnapshot,
      schemaName: "P",
    });
    await again.close();
    expect(hits.filter((h) => h === "/tiny.gguf")).toHaveLength(1);
  });

  it("downloads llama:hf:owner/repo/file.gguf from HF_ENDPOINT, checked against X-Linked-Etag", async () => {
    const env = { HF_ENDPOINT: base, PDA_MODEL_CACHE: join(cache, "hf") };
    const p = createProvider("llama:hf:someone/tiny-GGUF/stories260K.gguf", { env, max_output_tokens: 1500 });
    const r = await p.generate({
      role: "perception",
      system: "s",
      prompt: "Once",
      schema: PerceptionSnapshot,
      schemaName: "P",
    });
    expect(PerceptionSnapshot.safeParse(r.value).success).toBe(true);
    expect(hits).toContain("/someone/tiny-GGUF/resolve/main/stories260K.gguf");
    expect(existsSync(join(cache, "hf", "someone__tiny-GGUF__stories260K.gguf"))).toBe(true);
    await ((p as StructuredProvider).transport as LlamaTransport).close();
  });
});

describe("grammarSchema", () => {
  it("turns ranges into enums and keeps what the grammar understands", () => {
    const g = grammarSchema(modelJsonSchema(PerceptionSnapshot)) as {
      properties: Record<string, Record<string, unknown>>;
    };
    expect(g.properties.confidence!.enum).toHaveLength(21);
    expect(g.properties.confidence!.enum).toContain(0.5);
    expect(g.properties.reasoning).toMatchObject({ type: "string", minLength: 1 });
    expect(g.properties.entities).toMatchObject({ type: "array", items: { type: "string" } });
  });

  it("bounds integer indices to 64 values from their minimum", () => {
    const g = grammarSchema(modelJsonSchema(DecisionOutput)) as {
      properties: Record<string, Record<string, unknown>>;
    };
    expect(g.properties.step_index!.enum).toEqual(Array.from({ length: 64 }, (_, i) => i));
    expect(g.properties.type!.enum).toEqual(["CODE", "CONCLUDE", "NOP"]);
  });
});

it("offline with nothing configured: MODEL_UNREACHABLE (exit 3) saying what to do", async () => {
  const dead = createServer();
  await new Promise<void>((r) => dead.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(dead.address() as AddressInfo).port}/m.gguf`;
  await new Promise<void>((r) => dead.close(() => r()));
  const { ModelsFile } = await import("./index.js");
  const config = ModelsFile.parse({
    local_default: {
      url,
      file: "m.gguf",
      sha256: "0".repeat(64),
      size_bytes: 10,
      description: "Tiny test model",
    },
  });
  const models = createModels({
    config,
    env: { PDA_MODEL_CACHE: join(cache, "offline") },
    download: { progress: false },
  });
  const e = await models
    .generate({ role: "decision", system: "s", prompt: "p", schema: DecisionOutput, schemaName: "D" })
    .catch((x: unknown) => x);
  expect(e).toBeInstanceOf(ModelError);
  expect(e).toMatchObject({ code: "MODEL_UNREACHABLE", exitCode: 3 });
  expect((e as Error).message).toMatch(/Tiny test model/);
  expect((e as Error).message).toMatch(/GEMINI_API_KEY.*OPENAI_BASE_URL.*--model llama:<file.gguf>/s);
});
