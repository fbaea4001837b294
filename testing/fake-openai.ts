/**
 * A fake OpenAI-compatible server on 127.0.0.1 speaking the real chat-completions wire format
 * (`POST /v1/chat/completions`, `GET /v1/models`). It can behave like a server without structured outputs
 * (`jsonSchema: false` → 400 on `response_format: json_schema`, as older vLLM / LM Studio builds do).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { readBody, sendJson } from "./http.js";
import { openAIRequestProblem } from "./openai-rules.js";

export interface FakeOpenAIRequest {
  model: string;
  body: {
    model?: string;
    messages?: Array<{ role: string; content: string | FakeOpenAIContentPart[] }>;
    response_format?: { type: string; json_schema?: { name?: string; schema?: Record<string, unknown> } };
    [k: string]: unknown;
  };
  systemText: string;
  /** The text of the user messages (their text parts, for a message of parts). */
  userText: string;
  /** The image_url parts' URLs of the user messages, in order. */
  images: string[];
  /** "json_schema" | "json_object" | undefined */
  responseFormat?: string;
  n: number;
  headers: Record<string, string | string[] | undefined>;
}

/** A part of a message's content array: text, or a picture (a data: or https: URL). */
export type FakeOpenAIContentPart =
  { type: "text"; text: string } | { type: "image_url"; image_url: { url: string; detail?: string } };

const textOf = (content: string | FakeOpenAIContentPart[]) =>
  typeof content === "string" ? content : content.map((p) => (p.type === "text" ? p.text : "")).join("");

export type FakeOpenAIReply = { delayMs?: number } & (
  | { json: unknown; usage?: { input?: number; output?: number }; finishReason?: string }
  | { text: string; usage?: { input?: number; output?: number }; finishReason?: string }
  | { refusal: string }
  /** An error with the OpenAI envelope; `retryAfter` (seconds) / `retryAfterMs` set the headers. */
  | { status: number; message?: string; retryAfter?: string; retryAfterMs?: number }
);

export type FakeOpenAIHandler = (req: FakeOpenAIRequest) => FakeOpenAIReply | Promise<FakeOpenAIReply>;

export interface FakeOpenAI {
  /** Base URL including /v1, for OPENAI_BASE_URL. */
  url: string;
  requests: FakeOpenAIRequest[];
  close(): Promise<void>;
}

export async function startFakeOpenAI(options: {
  handler: FakeOpenAIHandler;
  /** false: reject `response_format: json_schema` with 400 like a server without structured outputs. */
  jsonSchema?: boolean;
  /** Model ids for GET /v1/models. */
  models?: string[];
}): Promise<FakeOpenAI> {
  const requests: FakeOpenAIRequest[] = [];
  const server = createServer((req, res) => {
    void serve(req, res).catch((e: unknown) => {
      if (!res.headersSent) sendError(res, 500, String(e));
    });
  });

  async function serve(req: IncomingMessage, res: ServerResponse) {
    const text = await readBody(req);
    if (req.method === "GET" && req.url === "/v1/models") {
      const data = (options.models ?? ["fake-model"]).map((id) => ({
        id,
        object: "model",
        created: 1686935002,
        owned_by: "fake",
      }));
      return sendJson(res, 200, { object: "list", data });
    }
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
      return sendError(res, 404, `no route ${req.method} ${req.url}`);
    }
    const body = JSON.parse(text) as FakeOpenAIRequest["body"];
    const messages = body.messages ?? [];
    const record: FakeOpenAIRequest = {
      model: body.model ?? "",
      body,
      systemText: messages
        .filter((m) => m.role === "system" || m.role === "developer")
        .map((m) => textOf(m.content))
        .join("\n"),
      userText: messages
        .filter((m) => m.role === "user")
        .map((m) => textOf(m.content))
        .join("\n"),
      images: messages
        .filter((m) => m.role === "user" && typeof m.content !== "string")
        .flatMap((m) => m.content as FakeOpenAIContentPart[])
        .flatMap((p) => (p.type === "image_url" ? [p.image_url.url] : [])),
      responseFormat: body.response_format?.type,
      n: requests.length + 1,
      headers: req.headers,
    };
    requests.push(record);
    const problem = openAIRequestProblem(body);
    if (problem) return sendError(res, 400, problem, "invalid_request_error");
    if (options.jsonSchema === false && record.responseFormat === "json_schema") {
      return sendError(
        res,
        400,
        "response_format type json_schema is not supported",
        "invalid_request_error",
      );
    }
    const reply = await options.handler(record);
    if (reply.delayMs) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, reply.delayMs);
        res.once("close", () => {
          clearTimeout(t);
          resolve();
        });
      });
      if (res.destroyed || res.writableEnded) return;
    }
    if ("status" in reply) {
      const headers: Record<string, string> = {};
      if (reply.retryAfter) headers["retry-after"] = reply.retryAfter;
      if (reply.retryAfterMs !== undefined) headers["retry-after-ms"] = String(reply.retryAfterMs);
      const type = reply.status === 429 ? "rate_limit_exceeded" : "server_error";
      return sendError(res, reply.status, reply.message ?? `fake ${reply.status}`, type, headers);
    }
    const content = "refusal" in reply ? null : "json" in reply ? JSON.stringify(reply.json) : reply.text;
    const usage = "refusal" in reply ? undefined : reply.usage;
    const input = usage?.input ?? Math.ceil((record.systemText.length + record.userText.length) / 4);
    const output = usage?.output ?? Math.ceil((content ?? "").length / 4);
    sendJson(res, 200, {
      id: `chatcmpl-fake-${record.n}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: record.model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content,
            refusal: "refusal" in reply ? reply.refusal : null,
            annotations: [],
          },
          logprobs: null,
          finish_reason: "refusal" in reply ? "stop" : (reply.finishReason ?? "stop"),
        },
      ],
      usage: {
        prompt_tokens: input,
        completion_tokens: output,
        total_tokens: input + output,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: {
          reasoning_tokens: 0,
          audio_tokens: 0,
          accepted_prediction_tokens: 0,
          rejected_prediction_tokens: 0,
        },
      },
      service_tier: "default",
      system_fingerprint: "fp_fake",
    });
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  type = "server_error",
  headers: Record<string, string> = {},
) {
  sendJson(res, status, { error: { message, type, param: null, code: null } }, headers);
}
