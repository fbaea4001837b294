/**
 * A fake Anthropic Messages API on 127.0.0.1 (`POST /v1/messages`), so tests point the real
 * `@anthropic-ai/sdk` at it (ANTHROPIC_BASE_URL). Replies are built from the documented shapes in
 * testing/fixtures/anthropic/ (message objects, the error envelope), and every request is first checked
 * against the published rules (anthropic-rules.ts): a request the real API would refuse gets its 400 here.
 * The answer goes where the request asked for it: a tool_use block for a forced tool, else a text block.
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { DecisionOutput, PACKAGE_ROOT, PerceptionSnapshot, modelJsonSchema } from "../core/index.js";
import { anthropicRequestProblem } from "./anthropic-rules.js";
import { readBody, sendJson } from "./http.js";

export const ANTHROPIC_FIXTURES = join(PACKAGE_ROOT, "testing", "fixtures", "anthropic");

/** A fixture file, parsed. */
export function anthropicFixture<T = Record<string, unknown>>(name: string): T {
  return JSON.parse(readFileSync(join(ANTHROPIC_FIXTURES, name), "utf8")) as T;
}

/** A block of a message's content (text or a base64 image; others kept as sent). */
export type FakeAnthropicBlock =
  | { type: "text"; text: string }
  | { type: "image"; source: { type: string; media_type: string; data: string } }
  | { type: string; [k: string]: unknown };

export interface FakeAnthropicRequest {
  model: string;
  body: {
    model?: string;
    max_tokens?: number;
    system?: string;
    messages?: Array<{ role: string; content: string | FakeAnthropicBlock[] }>;
    thinking?: { type: string; budget_tokens?: number };
    tools?: Array<{ name: string; input_schema: Record<string, unknown> }>;
    tool_choice?: { type: string; name?: string };
    output_config?: { effort?: string; format?: { type: string; schema: Record<string, unknown> } };
    [k: string]: unknown;
  };
  systemText: string;
  /** The user messages' text (text blocks joined). */
  userText: string;
  /** The user messages' images, as data URLs. */
  images: string[];
  /** How the answer was asked for: "json_schema" (output_config.format), "tool" (forced) or "prompt". */
  mode: "json_schema" | "tool" | "prompt";
  /** The forced tool's name (pda names it after the schema: PerceptionSnapshot, DecisionOutput). */
  toolName?: string;
  /** "perception" / "decision" when the schema asked for is one of those of core/, else undefined. */
  role?: string;
  n: number;
  headers: Record<string, string | string[] | undefined>;
}

export interface FakeAnthropicUsage {
  input?: number;
  output?: number;
}

export type FakeAnthropicReply = { delayMs?: number } &
  /** The answer, as a tool_use input or a text block; `thinking` adds a thinking block before it. */
  (
    | { json: unknown; usage?: FakeAnthropicUsage; thinking?: string }
    | { text: string; usage?: FakeAnthropicUsage; stopReason?: string }
    /** Thinking used the whole cap: only a thinking block, stop_reason max_tokens. */
    | { thinkingOnly: true; usage?: FakeAnthropicUsage }
    | { refusal: true; usage?: FakeAnthropicUsage }
    /** A response fixture (testing/fixtures/anthropic/), sent as it is. */
    | { fixture: string }
    /** An error with the documented envelope (errors.json); `retryAfter` in seconds sets the header. */
    | { status: number; message?: string; retryAfter?: string }
  );

export type FakeAnthropicHandler = (
  req: FakeAnthropicRequest,
) => FakeAnthropicReply | Promise<FakeAnthropicReply>;

export interface FakeAnthropic {
  /** Base URL for ANTHROPIC_BASE_URL (the SDK adds /v1/messages). */
  url: string;
  requests: FakeAnthropicRequest[];
  close(): Promise<void>;
}

const ROLE_KEYS: Array<[string, string]> = [
  ["perception", keysOf(modelJsonSchema(PerceptionSnapshot))],
  ["decision", keysOf(modelJsonSchema(DecisionOutput))],
];

function keysOf(schema: Record<string, unknown> | undefined): string {
  const props = schema?.properties;
  return props && typeof props === "object" ? Object.keys(props).sort().join(",") : "";
}

export async function startFakeAnthropic(options: { handler: FakeAnthropicHandler }): Promise<FakeAnthropic> {
  const requests: FakeAnthropicRequest[] = [];
  const errors =
    anthropicFixture<Record<string, { error: { type: string; message: string } }>>("errors.json");
  const template = anthropicFixture("response-json-output.json");
  const server = createServer((req, res) => {
    void serve(req, res).catch((e: unknown) => {
      if (!res.headersSent) sendError(res, 500, String(e));
    });
  });

  function sendError(
    res: ServerResponse,
    status: number,
    message?: string,
    headers: Record<string, string> = {},
  ) {
    const envelope = errors[String(status)] ?? errors["500"]!;
    const body = {
      ...envelope,
      error: { ...envelope.error, ...(message ? { message } : {}) },
      request_id: `req_fake_${requests.length}`,
    };
    sendJson(res, status, body, { "request-id": body.request_id, ...headers });
  }

  async function serve(req: IncomingMessage, res: ServerResponse) {
    const text = await readBody(req);
    if (req.method !== "POST" || req.url !== "/v1/messages") {
      return sendJson(res, 404, {
        type: "error",
        error: { type: "not_found_error", message: `no route ${req.method} ${req.url}` },
      });
    }
    const body = JSON.parse(text) as FakeAnthropicRequest["body"];
    const forced = body.tool_choice?.type === "tool" ? body.tool_choice.name : undefined;
    const schema = body.output_config?.format?.schema ?? body.tools?.[0]?.input_schema;
    const keys = keysOf(schema);
    const record: FakeAnthropicRequest = {
      model: body.model ?? "",
      body,
      systemText: typeof body.system === "string" ? body.system : "",
      userText: (body.messages ?? [])
        .filter((m) => m.role === "user")
        .map((m) =>
          blocksOf(m.content)
            .flatMap((b) => (b.type === "text" ? [b.text as string] : []))
            .join("\n"),
        )
        .join("\n"),
      images: (body.messages ?? [])
        .filter((m) => m.role === "user")
        .flatMap((m) => blocksOf(m.content))
        .flatMap((b) => {
          const source = b.type === "image" ? (b.source as { media_type: string; data: string }) : undefined;
          return source ? [`data:${source.media_type};base64,${source.data}`] : [];
        }),
      mode: body.output_config?.format ? "json_schema" : forced ? "tool" : "prompt",
      toolName: forced,
      role: keys ? ROLE_KEYS.find(([, k]) => k === keys)?.[0] : undefined,
      n: requests.length + 1,
      headers: req.headers,
    };
    requests.push(record);
    const problem = anthropicRequestProblem(body);
    if (problem) return sendError(res, 400, problem);
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
      return sendError(
        res,
        reply.status,
        reply.message,
        reply.retryAfter ? { "retry-after": reply.retryAfter } : {},
      );
    }
    if ("fixture" in reply) return sendJson(res, 200, anthropicFixture(reply.fixture));
    const thinkingBlock = (t: string) => ({ type: "thinking", thinking: t, signature: "ZmFrZQ==" });
    let content: unknown[];
    let stopReason: string;
    if ("json" in reply) {
      const answer = forced
        ? { type: "tool_use", id: `toolu_fake_${record.n}`, name: forced, input: reply.json }
        : { type: "text", text: JSON.stringify(reply.json) };
      content = [...(reply.thinking ? [thinkingBlock(reply.thinking)] : []), answer];
      stopReason = forced ? "tool_use" : "end_turn";
    } else if ("text" in reply) {
      content = reply.text ? [{ type: "text", text: reply.text }] : [];
      stopReason = reply.stopReason ?? "end_turn";
    } else if ("thinkingOnly" in reply) {
      content = [thinkingBlock("Working through the cases one by one")];
      stopReason = "max_tokens";
    } else {
      content = [];
      stopReason = "refusal";
    }
    const usage = reply.usage;
    const input = usage?.input ?? Math.ceil((record.systemText.length + record.userText.length) / 4);
    const output = usage?.output ?? Math.ceil(JSON.stringify(content).length / 4);
    sendJson(res, 200, {
      ...template,
      id: `msg_fake_${record.n}`,
      model: record.model,
      content,
      stop_reason: stopReason,
      usage: {
        ...(template.usage as Record<string, unknown>),
        input_tokens: input,
        output_tokens: output,
        output_tokens_details: { thinking_tokens: 0 },
      },
    });
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function blocksOf(content: string | FakeAnthropicBlock[]): FakeAnthropicBlock[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : content;
}
