/**
 * A fake Gemini API on 127.0.0.1 speaking the real REST shape (`POST /v1beta/models/{model}:generateContent`),
 * so tests point the real @google/genai client at it (`GEMINI_BASE_URL`). Each request goes to a handler
 * that returns a reply: a JSON or text candidate, an HTTP error (429 with a RetryInfo delay, 5xx, ...), a
 * blocked prompt, an empty candidate, a MAX_TOKENS cut, with optional latency. Every request is recorded.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { PerceptionSnapshot, DecisionOutput, modelJsonSchema } from "../core/index.js";
import { readBody, sendJson } from "./http.js";

export interface FakeGeminiRequest {
  /** The model id from the URL, e.g. "gemini-flash-latest". */
  model: string;
  /** The parsed JSON body exactly as the client sent it. */
  body: GeminiRequestBody;
  /** systemInstruction text, joined. */
  systemText: string;
  /** The text of the user turns, joined. */
  userText: string;
  /** generationConfig.responseJsonSchema (or responseSchema), if sent. */
  schema?: Record<string, unknown>;
  /** "perception" / "decision" when the schema is one of those of core/, else undefined. */
  role?: string;
  /** 1-based position of this request on this server. */
  n: number;
  headers: Record<string, string | string[] | undefined>;
  /** The request path, e.g. /v1beta/models/gemini-flash-latest:generateContent. */
  path: string;
}

/**
 * The generationConfig rules the Gemini API publishes for thinking, with the API's 400 messages: a level or a
 * budget, not both; a level only on Gemini 3; Gemini 2.5 Pro cannot turn thinking off.
 */
export function geminiRequestProblem(model: string, gc: Record<string, unknown>): string | undefined {
  const thinking = gc.thinkingConfig as { thinkingLevel?: string; thinkingBudget?: number } | undefined;
  if (!thinking) return undefined;
  if (thinking.thinkingLevel !== undefined && thinking.thinkingBudget !== undefined) {
    return "You can only set only one of thinking budget and thinking level.";
  }
  if (thinking.thinkingLevel !== undefined && /^gemini-2/.test(model)) {
    return "Thinking level is not supported for this model.";
  }
  if (thinking.thinkingBudget === 0 && /^gemini-2\.5-pro/.test(model)) {
    return "Budget 0 is invalid. This model only works in thinking mode.";
  }
  return undefined;
}

export interface GeminiRequestBody {
  contents?: Array<{ role?: string; parts?: Array<{ text?: string }> }>;
  systemInstruction?: { parts?: Array<{ text?: string }> };
  generationConfig?: Record<string, unknown>;
  [k: string]: unknown;
}

export interface FakeUsage {
  input?: number;
  output?: number;
  thoughts?: number;
}

/** What the fake replies. `delayMs` holds the reply back (latency / timeout tests). */
export type FakeGeminiReply = { delayMs?: number } & (
  | { json: unknown; usage?: FakeUsage; finishReason?: string }
  | { text: string; usage?: FakeUsage; finishReason?: string }
  /** An API error with the real error envelope; `retryDelay` ("38s") adds a google.rpc.RetryInfo detail. */
  | { status: number; message?: string; retryDelay?: string; body?: unknown }
  /** The prompt blocked: no candidates, promptFeedback.blockReason (the prompt's tokens still counted). */
  | { blocked: string; usage?: FakeUsage }
  /** A candidate with no parts (finishReason STOP), or `candidates: []` when `noCandidates`. */
  | { empty: true; noCandidates?: boolean }
  /** A raw HTTP answer, for shapes none of the above covers. */
  | { raw: { status: number; body: string; contentType?: string } }
);

export type FakeGeminiHandler = (req: FakeGeminiRequest) => FakeGeminiReply | Promise<FakeGeminiReply>;

export interface FakeGemini {
  /** Base URL for GEMINI_BASE_URL / httpOptions.baseUrl, e.g. http://127.0.0.1:41234 */
  url: string;
  port: number;
  /** Every request received, in order. */
  requests: FakeGeminiRequest[];
  close(): Promise<void>;
}

const STATUS_NAMES: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

const ROLE_KEYS: Array<[string, string]> = [
  ["perception", keysOf(modelJsonSchema(PerceptionSnapshot))],
  ["decision", keysOf(modelJsonSchema(DecisionOutput))],
];

function keysOf(schema: Record<string, unknown> | undefined): string {
  const props = schema?.properties;
  return props && typeof props === "object" ? Object.keys(props).sort().join(",") : "";
}

export async function startFakeGemini(options: { handler: FakeGeminiHandler }): Promise<FakeGemini> {
  const requests: FakeGeminiRequest[] = [];
  const pending = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req, res) => {
    void serve(req, res).catch((e: unknown) => {
      if (!res.headersSent)
        sendJson(res, 500, { error: { code: 500, message: String(e), status: "INTERNAL" } });
    });
  });

  async function serve(req: IncomingMessage, res: ServerResponse) {
    // The Gemini API path, or Vertex AI's (with a project and location, or express mode with a key).
    const m =
      /^\/(?:v1beta|v1beta1|v1)\/(?:projects\/[^/]+\/locations\/[^/]+\/)?(?:publishers\/google\/)?models\/([^/:]+):generateContent(?:\?.*)?$/.exec(
        req.url ?? "",
      );
    const text = await readBody(req);
    if (req.method !== "POST" || !m) {
      return sendJson(res, 404, {
        error: { code: 404, message: `no route ${req.method} ${req.url}`, status: "NOT_FOUND" },
      });
    }
    let body: GeminiRequestBody;
    try {
      body = JSON.parse(text) as GeminiRequestBody;
    } catch {
      return sendJson(res, 400, {
        error: { code: 400, message: "Invalid JSON payload", status: "INVALID_ARGUMENT" },
      });
    }
    const gc = body.generationConfig ?? {};
    const schema = (gc.responseJsonSchema ?? gc.responseSchema) as Record<string, unknown> | undefined;
    const record: FakeGeminiRequest = {
      model: decodeURIComponent(m[1]!),
      body,
      systemText: (body.systemInstruction?.parts ?? []).map((p) => p.text ?? "").join(""),
      userText: (body.contents ?? [])
        .filter((c) => c.role !== "model")
        .flatMap((c) => c.parts ?? [])
        .map((p) => p.text ?? "")
        .join("\n"),
      schema,
      role: ROLE_KEYS.find(([, k]) => k && k === keysOf(schema))?.[0],
      n: requests.length + 1,
      headers: req.headers,
      path: req.url ?? "",
    };
    requests.push(record);
    const problem = geminiRequestProblem(record.model, gc);
    if (problem) {
      return sendJson(res, 400, { error: { code: 400, message: problem, status: "INVALID_ARGUMENT" } });
    }
    const reply = await options.handler(record);
    if (reply.delayMs) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          pending.delete(t);
          resolve();
        }, reply.delayMs);
        pending.add(t);
        // A client that gave up (timeout/abort) ends the wait early.
        res.once("close", () => {
          clearTimeout(t);
          pending.delete(t);
          resolve();
        });
      });
      if (res.destroyed || res.writableEnded) return;
    }
    write(res, record, reply);
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of pending) clearTimeout(t);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function write(res: ServerResponse, req: FakeGeminiRequest, reply: FakeGeminiReply) {
  if ("raw" in reply) {
    res.writeHead(reply.raw.status, { "content-type": reply.raw.contentType ?? "application/json" });
    res.end(reply.raw.body);
    return;
  }
  if ("status" in reply) {
    const status = STATUS_NAMES[reply.status] ?? "UNKNOWN";
    const details: unknown[] = [];
    if (reply.retryDelay) {
      details.push({
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        violations: [
          {
            quotaMetric: "generativelanguage.googleapis.com/generate_content_requests",
            quotaId: "PerMinute",
          },
        ],
      });
      details.push({ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: reply.retryDelay });
    }
    const body = reply.body ?? {
      error: {
        code: reply.status,
        message: reply.message ?? `fake ${status}`,
        status,
        ...(details.length ? { details } : {}),
      },
    };
    return sendJson(res, reply.status, body);
  }
  const usageMetadata = (u: FakeUsage | undefined, out: string) => {
    const input = u?.input ?? Math.ceil((req.systemText.length + req.userText.length) / 4);
    const output = u?.output ?? Math.ceil(out.length / 4);
    return {
      promptTokenCount: input,
      candidatesTokenCount: output,
      ...(u?.thoughts ? { thoughtsTokenCount: u.thoughts } : {}),
      totalTokenCount: input + output + (u?.thoughts ?? 0),
      promptTokensDetails: [{ modality: "TEXT", tokenCount: input }],
    };
  };
  const envelope = { modelVersion: req.model, responseId: `fake-${req.n}` };
  if ("blocked" in reply) {
    return sendJson(res, 200, {
      promptFeedback: { blockReason: reply.blocked },
      usageMetadata: usageMetadata(reply.usage, ""),
      ...envelope,
    });
  }
  if ("empty" in reply) {
    return sendJson(res, 200, {
      candidates: reply.noCandidates ? [] : [{ content: { role: "model" }, finishReason: "STOP", index: 0 }],
      usageMetadata: usageMetadata(undefined, ""),
      ...envelope,
    });
  }
  const text = "json" in reply ? JSON.stringify(reply.json) : reply.text;
  return sendJson(res, 200, {
    candidates: [
      {
        content: { parts: [{ text }], role: "model" },
        finishReason: reply.finishReason ?? "STOP",
        index: 0,
      },
    ],
    usageMetadata: usageMetadata(reply.usage, text),
    ...envelope,
  });
}

/**
 * A handler that plays replies in order per role (perception / decision, told apart by the schema the
 * client sent). A request with no reply left gets HTTP 400 and is recorded in `unexpected`; `unconsumed()` lists replies never asked for.
 */
export function scriptedGeminiHandler(script: Record<string, FakeGeminiReply[]>) {
  const queues = new Map(Object.entries(script).map(([k, v]) => [k, [...v]]));
  const unexpected: FakeGeminiRequest[] = [];
  const handler: FakeGeminiHandler = (req) => {
    const role = req.role ?? "other";
    const next = queues.get(role)?.shift();
    if (next) return next;
    unexpected.push(req);
    // 400, not 5xx: the client must not retry a request the test did not plan for.
    return { status: 400, message: `fake gemini: no scripted "${role}" reply left (request ${req.n})` };
  };
  return {
    handler,
    unexpected,
    unconsumed(): Record<string, number> {
      const out: Record<string, number> = {};
      for (const [role, q] of queues) if (q.length) out[role] = q.length;
      return out;
    },
  };
}
