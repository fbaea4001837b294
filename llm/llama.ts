/**
 * Local GGUF models through node-llama-cpp (its prebuilt binary for the machine: CUDA, Vulkan, Metal or CPU,
 * on x64 and arm64), with the JSON schema enforced as a grammar:
 * even a model whose text is meaningless produces JSON of the right shape. Ranges and cross-field rules the
 * grammar cannot express are still checked by zod (and get the repair round) like every other provider.
 */
import { availableParallelism } from "node:os";
import { isAbsolute, resolve } from "node:path";
import { existsSync } from "node:fs";
import type { Llama, LlamaContext, LlamaModel, LlamaGrammar } from "node-llama-cpp";
import { ModelError, type RawCompletion, type RawTurn } from "../core/index.js";
import { noModelMessage } from "./no-model.js";
import { ensureModelFile, hfSpec, type DownloadOptions, type ModelFileSpec } from "./download.js";
import { withTimeout } from "./retry.js";
import { ModelOutputError, type Transport } from "./structured.js";

export interface LlamaOptions {
  /** A .gguf path, `hf:owner/repo/file.gguf`, or empty for the local default model. */
  model?: string;
  /** The local default (models.yaml local_default), used when `model` is empty. */
  localDefault?: ModelFileSpec & { description?: string };
  temperature?: number;
  max_output_tokens?: number;
  timeout_ms?: number;
  context_size?: number;
  /** 0 = one less than the cores, at least 1 (oversubscribed threads make llama.cpp crawl). */
  threads?: number;
  /** "auto" (default): the best prebuilt binary that loads here; false: CPU only; or one backend. */
  gpu?: "auto" | "cuda" | "vulkan" | "metal" | false;
  download?: DownloadOptions;
}

interface Loaded {
  llama: Llama;
  model: LlamaModel;
  context: LlamaContext;
}

export class LlamaTransport implements Transport {
  readonly provider = "llama";
  readonly model: string;
  private loading?: Promise<Loaded>;
  private path?: Promise<string>;
  private readonly grammars = new Map<string, Promise<LlamaGrammar>>();
  /** One sequence, one call at a time. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: LlamaOptions = {}) {
    this.model = options.model || options.localDefault?.file || "local-default";
  }

  complete(turn: RawTurn): Promise<RawCompletion> {
    const run = this.queue.then(() => this.once(turn));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Free the model and the native context. */
  async close(): Promise<void> {
    const loaded = await this.loading?.catch(() => undefined);
    this.loading = undefined;
    if (!loaded) return;
    await loaded.context.dispose();
    await loaded.model.dispose();
    await loaded.llama.dispose();
  }

  private async once(turn: RawTurn): Promise<RawCompletion> {
    const { llama, model, context } = await this.load();
    const grammar = await this.grammar(llama, turn.jsonSchema);
    const { LlamaChatSession } = await import("node-llama-cpp");
    const sequence = context.getSequence();
    const session = new LlamaChatSession({ contextSequence: sequence, systemPrompt: turn.system });
    const maxTokens = turn.call?.max_output_tokens ?? this.options.max_output_tokens ?? 2048;
    try {
      const meta = await withTimeout(
        turn.call?.timeout_ms ?? this.options.timeout_ms ?? 300_000,
        turn.signal,
        (signal) =>
          session.promptWithMeta(turn.prompt, {
            grammar,
            maxTokens,
            temperature: turn.call?.temperature ?? this.options.temperature ?? 0,
            signal,
          }),
        `llama:${this.model} (${turn.role})`,
      );
      const usage = {
        input_tokens: model.tokenize(turn.system + turn.prompt).length,
        output_tokens: model.tokenize(meta.responseText).length,
      };
      if (meta.stopReason === "maxTokens") {
        throw new ModelOutputError(
          "MODEL_TRUNCATED",
          `llama:${this.model} hit its output token limit (${maxTokens}); raise max_output_tokens in models.yaml`,
          { raw: meta.responseText, usage, attempts: 1, finish_reason: meta.stopReason },
        );
      }
      return { text: meta.responseText, usage, finish_reason: meta.stopReason };
    } catch (e) {
      if (e instanceof ModelError) throw e;
      throw new ModelError("MODEL_HTTP", `llama:${this.model}: ${(e as Error).message}`, { cause: e });
    } finally {
      session.dispose({ disposeSequence: true });
    }
  }

  /** The model file, downloaded now if needed, so a missing model fails before any session starts. */
  async prepare(): Promise<void> {
    this.path ??= this.modelPath().catch((e: unknown) => {
      this.path = undefined;
      throw e;
    });
    await this.path;
  }

  private load(): Promise<Loaded> {
    this.loading ??= this.doLoad().catch((e: unknown) => {
      this.loading = undefined;
      throw e;
    });
    return this.loading;
  }

  private async doLoad(): Promise<Loaded> {
    await this.prepare();
    const path = await this.path!;
    const { getLlama } = await import("node-llama-cpp");
    const threads = this.options.threads || Math.max(1, availableParallelism() - 1);
    let llama: Llama;
    try {
      // Never build from source at run time: a prebuilt binary (GPU when one is usable, else CPU) or an error.
      const gpu = this.options.gpu ?? "auto";
      llama = await getLlama({ gpu, build: "never", logLevel: "error" as never, maxThreads: threads });
    } catch (e) {
      throw new ModelError(
        "MODEL_UNREACHABLE",
        `llama: node-llama-cpp has no usable prebuilt binary for ${process.platform}-${process.arch} ` +
          `(gpu: ${String(this.options.gpu ?? "auto")}; ${(e as Error).message}); set llama.gpu: false in ` +
          `models.yaml for CPU only, or use gemini or openai instead`,
        { cause: e },
      );
    }
    let model: LlamaModel;
    try {
      model = await llama.loadModel({ modelPath: path });
    } catch (e) {
      await llama.dispose();
      throw new ModelError("MODEL_UNREACHABLE", `llama: cannot load ${path}: ${(e as Error).message}`, {
        cause: e,
      });
    }
    const contextSize = Math.min(this.options.context_size ?? 4096, model.trainContextSize);
    const context = await model.createContext({ contextSize, threads });
    return { llama, model, context };
  }

  private async modelPath(): Promise<string> {
    const spec = this.options.model ?? "";
    if (spec.startsWith("hf:"))
      return ensureModelFile(hfSpec(spec, this.options.download?.env), this.options.download);
    if (spec) {
      const path = isAbsolute(spec) ? spec : resolve(spec);
      if (!existsSync(path)) {
        throw new ModelError("MODEL_UNREACHABLE", `llama: model file ${path} does not exist`);
      }
      return path;
    }
    const def = this.options.localDefault;
    if (!def)
      throw new ModelError("MODEL_UNREACHABLE", "llama: no model file given and no local_default configured");
    try {
      return await ensureModelFile(def, this.options.download);
    } catch (e) {
      if (!(e instanceof ModelError) || e.code !== "MODEL_UNREACHABLE") throw e;
      throw new ModelError(
        "MODEL_UNREACHABLE",
        noModelMessage(
          `GEMINI_API_KEY and OPENAI_BASE_URL are not set;\n the local default model, ` +
            `${def.description || def.file}, is not cached and could not be fetched:\n ${e.message}`,
        ),
        { cause: e },
      );
    }
  }

  private grammar(llama: Llama, schema: Record<string, unknown>): Promise<LlamaGrammar> {
    const key = JSON.stringify(schema);
    let g = this.grammars.get(key);
    if (!g) {
      g = llama.createGrammarForJsonSchema(grammarSchema(schema) as never);
      this.grammars.set(key, g);
    }
    return g;
  }
}

/**
 * The JSON Schema as node-llama-cpp's grammar understands it. Its grammar emits every listed property and
 * cannot express numeric ranges, so: a bounded number becomes an enum on a grid inside its range (e.g.
 * confidence 0..1 → 0, 0.05, …, 1), an integer with a lower bound an enum of its first 64 values, and
 * unsupported keywords are dropped.
 * Strings get minLength 1 so a required text is never empty.
 */
export function grammarSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(grammarSchema);
  if (!schema || typeof schema !== "object") return schema;
  const s = schema as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  const keep = [
    "type",
    "enum",
    "const",
    "description",
    "required",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "format",
    "$ref",
  ];
  for (const k of keep) if (k in s) out[k] = s[k];
  if (s.properties && typeof s.properties === "object") {
    out.properties = Object.fromEntries(
      Object.entries(s.properties as Record<string, unknown>).map(([k, v]) => [k, grammarSchema(v)]),
    );
  }
  if (s.items) out.items = grammarSchema(s.items);
  if (s.$defs) out.$defs = grammarSchema(s.$defs);
  for (const k of ["anyOf", "oneOf"]) if (Array.isArray(s[k])) out.oneOf = grammarSchema(s[k]);
  if (typeof s.additionalProperties === "object")
    out.additionalProperties = grammarSchema(s.additionalProperties);
  const lo = typeof s.minimum === "number" ? s.minimum : undefined;
  const hi = typeof s.maximum === "number" ? s.maximum : undefined;
  if (s.type === "integer" && lo !== undefined && !out.enum) {
    // Indices and counts: the first 64 values from the lower bound keep a small model from going negative.
    const top = Math.min(hi ?? Infinity, lo + 63);
    delete out.type;
    out.enum = Array.from({ length: top - lo + 1 }, (_, i) => lo + i);
  } else if (s.type === "number" && lo !== undefined && hi !== undefined && hi > lo && !out.enum) {
    delete out.type;
    out.enum = Array.from({ length: 21 }, (_, i) => Number((lo + ((hi - lo) * i) / 20).toPrecision(6)));
  }
  if (out.type === "string" && !out.enum && !out.const && out.minLength === undefined && !out.format) {
    out.minLength = 1;
  }
  return out;
}
