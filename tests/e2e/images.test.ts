/**
 * A tool's image result reaches a multimodal model as an image part: `pda run` against the fake Gemini API (or
 * the fake OpenAI-compatible or Anthropic server), the step returns a real stdio server's image content block, and the next
 * perception request carries it as `inlineData` (an `image_url` data URL) while its text holds a short
 * placeholder instead of the base64. A model that takes no images gets the placeholder only.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../core/index.js";
import { achieved, code, snap } from "../../agent/tests/harness.js";
import {
  scriptedGeminiHandler,
  startFakeAnthropic,
  startFakeGemini,
  startFakeOpenAI,
  type FakeAnthropic,
  type FakeGemini,
  type FakeOpenAI,
} from "../../testing/index.js";
import { TINY_PNG } from "../../mcp_servers/testing/sampling_server.js";

let dir: string;
let gemini: FakeGemini | undefined;
let openai: FakeOpenAI | undefined;
let anthropic: FakeAnthropic | undefined;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-e2e-images-"));
  const server = join(PACKAGE_ROOT, "dist/mcp_servers/testing/sampling_server.js");
  writeFileSync(
    join(dir, "mcp_server_config.yaml"),
    stringify({ servers: [{ id: "camera", command: process.execPath, args: [server] }] }),
  );
});
afterAll(async () => {
  await gemini?.close();
  await openai?.close();
  await anthropic?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** `pda run` asking the camera, with these model flags and environment; exit code, stdout and stderr. */
function run(model: string, env: Record<string, string>) {
  const args = [
    join(PACKAGE_ROOT, "dist/main.js"),
    "--config",
    dir,
    "--db",
    join(dir, "pda.db"),
    "run",
    "What does the camera see?",
    "--model",
    model,
    "--hil",
    "policy:fail",
    "--json",
  ];
  return new Promise<{ code: number; out: string; err: string }>((resolve) =>
    execFile(
      process.execPath,
      args,
      { env: { ...process.env, NO_COLOR: "1", ...env }, timeout: 60_000 },
      (e, out, err) => resolve({ code: e ? ((e as { code?: number }).code ?? 1) : 0, out, err }),
    ),
  );
}

/** The camera session against the fake OpenAI server: the perception requests' user messages. */
async function openAIPerceptions(model: string) {
  const replies: Record<string, unknown[]> = {
    PerceptionSnapshot: [snap(), achieved("a red square")],
    DecisionOutput: [code(["Step 0: look"], 0, "return await camera.picture();")],
  };
  openai = await startFakeOpenAI({
    handler: (req) => {
      const next = replies[req.body.response_format?.json_schema?.name ?? ""]?.shift();
      return next ? { json: next } : { status: 400, message: "fake openai: no reply left" };
    },
  });
  try {
    const r = await run(model, { OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: openai.url });
    expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
    expect(JSON.parse(r.out).status).toBe("succeeded");
    return openai.requests.filter((q) => q.body.response_format?.json_schema?.name === "PerceptionSnapshot");
  } finally {
    await openai.close();
    openai = undefined;
  }
}

it("an OpenAI-compatible multimodal model (models.yaml: multimodal) gets the tool's image as an image_url data URL part", async () => {
  const perceptions = await openAIPerceptions("openai:gpt-4o-mini");
  expect(perceptions).toHaveLength(2);
  const [before, after] = perceptions.map((q) => q.body.messages!.find((m) => m.role === "user")!.content);
  expect(typeof before).toBe("string");
  expect(after).toEqual([
    { type: "text", text: expect.stringContaining("[image 1: image/png, 1 KB, attached]") },
    { type: "image_url", image_url: { url: `data:image/png;base64,${TINY_PNG}` } },
  ]);
  expect(perceptions[1]!.userText).not.toContain(TINY_PNG.slice(0, 24));
  expect(perceptions[1]!.userText).toContain("the scene from above");
});

it("an OpenAI-compatible model that takes no images gets the placeholder and a note, never the base64", async () => {
  const perceptions = await openAIPerceptions("openai:qwen2.5:0.5b");
  expect(perceptions).toHaveLength(2);
  const after = perceptions[1]!;
  expect(typeof after.body.messages!.find((m) => m.role === "user")!.content).toBe("string");
  expect(after.images).toEqual([]);
  expect(after.userText).toContain("[image 1: image/png, 1 KB, attached]");
  expect(after.userText).toContain(
    "1 image goes with this prompt but could not be sent: this model takes no images.",
  );
  expect(after.userText).not.toContain(TINY_PNG.slice(0, 24));
  expect(after.userText).toContain("the scene from above");
});

it("an image content block from a tool goes to Gemini as an inlineData part, not as base64 text", async () => {
  const script = scriptedGeminiHandler({
    perception: [{ json: snap() }, { json: achieved("a red square") }],
    decision: [{ json: code(["Step 0: look"], 0, "return await camera.picture();") }],
  });
  gemini = await startFakeGemini({ handler: script.handler });
  const r = await run("gemini:gemini-test-flash", {
    GEMINI_API_KEY: "test-key",
    GEMINI_BASE_URL: gemini.url,
  });
  expect({ code: r.code, err: r.err, unexpected: script.unexpected.length }).toEqual({
    code: 0,
    err: "",
    unexpected: 0,
  });
  expect(JSON.parse(r.out).status).toBe("succeeded");

  const perceptions = gemini.requests.filter((q) => q.role === "perception");
  expect(perceptions).toHaveLength(2);
  const [before, after] = perceptions.map((q) => q.body.contents![0]!.parts!);
  // The query's perception has no picture; the step result's has the text, then the picture.
  expect(before).toHaveLength(1);
  expect(after).toEqual([
    { text: expect.stringContaining("[image 1: image/png, 1 KB, attached]") },
    { inlineData: { mimeType: "image/png", data: TINY_PNG } },
  ]);
  expect(perceptions[1]!.userText).not.toContain(TINY_PNG.slice(0, 24));
  expect(perceptions[1]!.userText).toContain("the scene from above");
});

it("an image content block from a tool goes to Claude as a base64 image block after the prompt's text", async () => {
  const replies: Record<string, unknown[]> = {
    perception: [snap(), achieved("a red square")],
    decision: [code(["Step 0: look"], 0, "return await camera.picture();")],
  };
  anthropic = await startFakeAnthropic({
    handler: (req) => {
      const next = replies[req.role ?? ""]?.shift();
      return next ? { json: next } : { status: 400, message: "fake anthropic: no reply left" };
    },
  });
  const r = await run("anthropic:claude-haiku-4-5", {
    ANTHROPIC_API_KEY: "test-key",
    ANTHROPIC_BASE_URL: anthropic.url,
  });
  expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
  expect(JSON.parse(r.out).status).toBe("succeeded");

  const perceptions = anthropic.requests.filter((q) => q.role === "perception");
  expect(perceptions).toHaveLength(2);
  const [before, after] = perceptions.map((q) => q.body.messages![0]!.content);
  expect(typeof before).toBe("string");
  expect(after).toEqual([
    { type: "text", text: expect.stringContaining("[image 1: image/png, 1 KB, attached]") },
    { type: "image", source: { type: "base64", media_type: "image/png", data: TINY_PNG } },
  ]);
  expect(perceptions[1]!.images).toEqual([`data:image/png;base64,${TINY_PNG}`]);
  expect(perceptions[1]!.userText).not.toContain(TINY_PNG.slice(0, 24));
  expect(perceptions[1]!.userText).toContain("the scene from above");
});
