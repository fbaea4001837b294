/**
 * Model files for the local provider: resolve `hf:owner/repo/file.gguf` and the local default to a file in
 * the user's cache, downloading once with a progress bar and verifying the checksum before the file is
 * used. A partial or corrupt download never takes the final name.
 */
import { createHash } from "node:crypto";
import { createWriteStream, existsSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { Transform } from "node:stream";
import envPaths from "env-paths";
import { ModelError, systemClock, type Clock } from "../core/index.js";
import { DEFAULT_RETRY, connectionError, withRetry, type RetryPolicy } from "./retry.js";

export interface ModelFileSpec {
  url: string;
  file: string;
  /** Expected sha256 (hex); when absent the server's X-Linked-Etag (Hugging Face LFS) is used if it has one. */
  sha256?: string;
  size_bytes?: number;
}

export interface DownloadOptions {
  /** Cache folder; default `<user cache>/pda/models` (env PDA_MODEL_CACHE). */
  cacheDir?: string;
  /** Show a progress bar on stderr (default: when stderr is a TTY). */
  progress?: boolean;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  /** Retries of a refused or reset connection (an unresolved name fails at once). */
  retry?: RetryPolicy;
  clock?: Clock;
}

export function modelCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.PDA_MODEL_CACHE || join(envPaths("pda", { suffix: "" }).cache, "models");
}

/** `hf:owner/repo/path/file.gguf` → its download URL (HF_ENDPOINT honoured) and a cache file name. */
export function hfSpec(spec: string, env: NodeJS.ProcessEnv = process.env): ModelFileSpec {
  const m = /^hf:([^/]+)\/([^/]+)\/(.+\.gguf)$/i.exec(spec.trim());
  if (!m) {
    throw new ModelError(
      "MODEL_SPEC_INVALID",
      `llama:${spec}: expected hf:<owner>/<repo>/<file>.gguf, e.g. hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_0.gguf`,
    );
  }
  const [, owner, repo, path] = m as unknown as [string, string, string, string];
  const endpoint = (env.HF_ENDPOINT || "https://huggingface.co").replace(/\/+$/, "");
  return {
    url: `${endpoint}/${owner}/${repo}/resolve/main/${path}`,
    file: `${owner}__${repo}__${path.replace(/\//g, "__")}`,
  };
}

/** The cached file for `spec`, downloading it first when it is not there yet. */
export async function ensureModelFile(spec: ModelFileSpec, options: DownloadOptions = {}): Promise<string> {
  const dir = options.cacheDir ?? modelCacheDir(options.env);
  const target = join(dir, spec.file);
  if (existsSync(target) && (!spec.size_bytes || statSync(target).size === spec.size_bytes)) return target;
  mkdirSync(dir, { recursive: true });
  const part = `${target}.part`;
  const { value: res } = await withRetry(
    async () => {
      try {
        return await fetch(spec.url, { redirect: "follow", signal: options.signal });
      } catch (e) {
        throw connectionError(e, `download from ${new URL(spec.url).host}`, "the network connection");
      }
    },
    { clock: options.clock ?? systemClock, policy: options.retry ?? DEFAULT_RETRY, signal: options.signal },
  );
  if (!res.ok || !res.body) {
    throw new ModelError("MODEL_UNREACHABLE", `cannot download ${spec.url}: HTTP ${res.status}`);
  }
  const total = Number(res.headers.get("content-length")) || spec.size_bytes || 0;
  const expected = spec.sha256 ?? linkedEtag(res.headers);
  const hash = createHash("sha256");
  const showBar = options.progress ?? process.stderr.isTTY;
  // cli-progress is loaded only when a bar is drawn: llm/ is imported by commands that never download.
  const cliProgress = showBar ? (await import("cli-progress")).default : undefined;
  const bar = cliProgress
    ? new cliProgress.SingleBar(
        {
          format: `downloading ${spec.file} [{bar}] {percentage}% {value}/{total} MB`,
          stream: process.stderr,
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  const mb = (n: number) => Math.round(n / 1e5) / 10;
  bar?.start(mb(total), 0);
  let received = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      received += chunk.length;
      bar?.update(mb(received));
      done(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(res.body as never), meter, createWriteStream(part), {
      signal: options.signal,
    });
  } catch (e) {
    rmSync(part, { force: true });
    throw new ModelError("MODEL_UNREACHABLE", `download of ${spec.url} failed: ${(e as Error).message}`, {
      cause: e,
    });
  } finally {
    bar?.stop();
  }
  const actual = hash.digest("hex");
  if (spec.size_bytes && received !== spec.size_bytes) {
    rmSync(part, { force: true });
    throw new ModelError(
      "MODEL_CHECKSUM",
      `${spec.url}: got ${received} bytes, expected ${spec.size_bytes}; the partial file was removed`,
    );
  }
  if (expected && actual !== expected) {
    rmSync(part, { force: true });
    throw new ModelError(
      "MODEL_CHECKSUM",
      `${spec.url}: sha256 ${actual} does not match the expected ${expected}; the file was removed`,
    );
  }
  renameSync(part, target);
  return target;
}

/** Hugging Face serves LFS files with `X-Linked-Etag: "<sha256>"`. */
function linkedEtag(headers: Headers): string | undefined {
  const v = headers.get("x-linked-etag")?.replace(/"/g, "").trim();
  return v && /^[0-9a-f]{64}$/.test(v) ? v : undefined;
}
