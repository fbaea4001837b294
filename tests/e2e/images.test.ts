/**
 * A tool's image result reaches a multimodal model as an image part: `pda run` against the fake Gemini API,
 * the step returns a real stdio server's image content block, and the next perception request carries it as
 * `inlineData` while its text holds a short placeholder instead of the base64.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../core/index.js";
import { achieved, code, snap } from "../../agent/tests/harness.js";
import { scriptedGeminiHandler, startFakeGemini, type FakeGemini } from "../../testing/index.js";
import { TINY_PNG } from "../../mcp_servers/testing/sampling_server.js";

let dir: string;
let gemini: FakeGemini | undefined;
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
  rmSync(dir, { recursive: true, force: true });
});

it("an image content block from a tool goes to Gemini as an inlineData part, not as base64 text", async () => {
  const script = scriptedGeminiHandler({
    perception: [{ json: snap() }, { json: achieved("a red square") }],
    decision: [{ json: code(["Step 0: look"], 0, "return await camera.picture();") }],
  });
  gemini = await startFakeGemini({ handler: script.handler });
  const args = [
    join(PACKAGE_ROOT, "dist/main.js"),
    "--config",
    dir,
    "--db",
    join(dir, "pda.db"),
    "run",
    "What does the camera see?",
    "--model",
    "gemini:gemini-test-flash",
    "--hil",
    "policy:fail",
    "--json",
  ];
  const env = { ...process.env, NO_COLOR: "1", GEMINI_API_KEY: "test-key", GEMINI_BASE_URL: gemini.url };
  const r = await new Promise<{ code: number; out: string; err: string }>((resolve) =>
    execFile(process.execPath, args, { env, timeout: 60_000 }, (e, out, err) =>
      resolve({ code: e ? ((e as { code?: number }).code ?? 1) : 0, out, err }),
    ),
  );
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
