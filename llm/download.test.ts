/** Model downloads: checksum and size verified before the file takes its name; a bad file never stays. */
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureModelFile, hfSpec } from "./index.js";

const payload = Buffer.from("GGUF" + "x".repeat(50_000));
const sha = createHash("sha256").update(payload).digest("hex");
const dir = mkdtempSync(join(tmpdir(), "pda-dl-"));
let server: Server;
let base = "";

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === "/cut.gguf") {
      // Announces the full length, sends half, then drops the connection.
      res.writeHead(200, { "content-length": payload.length });
      res.write(payload.subarray(0, 1000));
      setTimeout(() => res.destroy(), 20);
      return;
    }
    if (req.url === "/missing.gguf") return void res.writeHead(404).end("nope");
    res.writeHead(200, { "content-length": payload.length });
    res.end(payload);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

describe("ensureModelFile", () => {
  it("downloads, verifies the sha256 and reuses the cached file", async () => {
    const spec = { url: `${base}/a.gguf`, file: "a.gguf", sha256: sha, size_bytes: payload.length };
    const path = await ensureModelFile(spec, { cacheDir: dir, progress: false });
    expect(path).toBe(join(dir, "a.gguf"));
    expect(await ensureModelFile({ ...spec, url: `${base}/missing.gguf` }, { cacheDir: dir })).toBe(path);
  });

  it("rejects a checksum mismatch and leaves no file behind", async () => {
    const spec = { url: `${base}/b.gguf`, file: "b.gguf", sha256: "f".repeat(64) };
    await expect(ensureModelFile(spec, { cacheDir: dir, progress: false })).rejects.toMatchObject({
      code: "MODEL_CHECKSUM",
    });
    expect(readdirSync(dir).filter((f) => f.startsWith("b.gguf"))).toEqual([]);
  });

  it("rejects a short or broken download and an HTTP error", async () => {
    const cut = { url: `${base}/cut.gguf`, file: "cut.gguf", sha256: sha, size_bytes: payload.length };
    await expect(ensureModelFile(cut, { cacheDir: dir, progress: false })).rejects.toMatchObject({
      code: expect.stringMatching(/MODEL_UNREACHABLE|MODEL_CHECKSUM/),
    });
    expect(existsSync(join(dir, "cut.gguf"))).toBe(false);
    expect(existsSync(join(dir, "cut.gguf.part"))).toBe(false);
    const missing = { url: `${base}/missing.gguf`, file: "m.gguf" };
    await expect(ensureModelFile(missing, { cacheDir: dir })).rejects.toThrow(/HTTP 404/);
  });

  it("parses hf: specs and honours HF_ENDPOINT", () => {
    expect(hfSpec("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_0.gguf", {})).toEqual({
      url: "https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_0.gguf",
      file: "Qwen__Qwen2.5-0.5B-Instruct-GGUF__qwen2.5-0.5b-instruct-q4_0.gguf",
    });
    expect(hfSpec("hf:a/b/sub/c.gguf", { HF_ENDPOINT: "http://mirror/" }).url).toBe(
      "http://mirror/a/b/resolve/main/sub/c.gguf",
    );
    expect(() => hfSpec("hf:just-a-name.gguf", {})).toThrow(/expected hf:<owner>\/<repo>\/<file>\.gguf/);
  });
});
