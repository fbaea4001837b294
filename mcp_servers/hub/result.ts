/** Turning MCP results and SDK errors into the hub's contract: a plain value, or a ToolError with a code. */
import {
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  type CallToolResult,
} from "@modelcontextprotocol/client";
import { ToolError, errorMessage } from "../../core/index.js";
import { ANSWER_TOO_LARGE } from "./http-cap.js";

/**
 * structuredContent when present, else JSON parsed from the text, else the text; other content as is. Text
 * holding an integer JSON numbers cannot carry exactly (past 2^53, e.g. ids) stays text: parsing would change
 * the value the server sent.
 */
export function resultValue(result: CallToolResult): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const content = result.content ?? [];
  if (content.length > 0 && content.every((c) => c.type === "text")) {
    const text = content.map((c) => (c as { text: string }).text).join("\n");
    return parseJsonish(text);
  }
  return content;
}

function parseJsonish(text: string): unknown {
  const t = text.trim();
  // Only try JSON where it can be JSON: avoids exceptions for plain prose on the hot path.
  if (t && (/^[[{"\-0-9]/.test(t) || t === "true" || t === "false" || t === "null")) {
    try {
      const value: unknown = JSON.parse(t);
      return /\d{16}/.test(t) && hasUnsafeInteger(value) ? text : value;
    } catch {
      // prose that happens to start like JSON
    }
  }
  return text;
}

function hasUnsafeInteger(value: unknown): boolean {
  if (typeof value === "number") return Number.isInteger(value) && !Number.isSafeInteger(value);
  if (value === null || typeof value !== "object") return false;
  return Object.values(value).some(hasUnsafeInteger);
}

/** The size of a result as JSON, when its answer's size on the wire is not known (HTTP). */
export function resultBytes(result: CallToolResult): number {
  return Buffer.byteLength(JSON.stringify(result) ?? "", "utf8");
}

/** The text of an isError result, for the ToolError message. */
export function errorText(result: CallToolResult): string {
  const texts = (result.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => (c as { text: string }).text);
  return texts.join("\n").trim() || "the tool reported an error without a message";
}

/** An SDK/transport failure of a tools/call as a typed ToolError. */
export function mapCallError(
  e: unknown,
  tool: string,
  server: string,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  exitInfo: () => string | undefined,
): ToolError {
  if (e instanceof ToolError) return e;
  if (signal?.aborted) {
    const reason =
      signal.reason instanceof Error ? signal.reason.message : String(signal.reason ?? "aborted");
    return new ToolError("TOOL_CANCELLED", tool, `call to ${tool} was cancelled: ${reason}`, { cause: e });
  }
  if (e instanceof SdkError) {
    // Failures on this side: the timeout, the connection gone, or the server's answer unusable.
    switch (e.code) {
      case SdkErrorCode.RequestTimeout:
        return timedOut(tool, timeoutMs, e);
      case SdkErrorCode.ConnectionClosed:
      case SdkErrorCode.NotConnected:
      case SdkErrorCode.SendFailed:
        return crashed(tool, server, e, exitInfo);
      case SdkErrorCode.InvalidResult:
        return new ToolError(
          "TOOL_BAD_OUTPUT",
          tool,
          `server "${server}" gave ${tool} an invalid answer: ${e.message}`,
          {
            cause: e,
          },
        );
    }
  }
  if (e instanceof ProtocolError) {
    // The SDK client checks structured content against the tool's declared output schema and reports a
    // mismatch as InvalidParams/InvalidRequest, which would read as the caller's fault: it is the server's.
    if (BROKEN_OUTPUT.test(e.message)) {
      return new ToolError(
        "TOOL_BAD_OUTPUT",
        tool,
        `server "${server}" answered ${tool} outside its own output schema: ${stripMcpPrefix(e.message)}`,
        { cause: e },
      );
    }
    switch (e.code) {
      case ANSWER_TOO_LARGE:
        return new ToolError("TOOL_ANSWER_TOO_LARGE", tool, `${tool}: ${stripMcpPrefix(e.message)}`, {
          cause: e,
        });
      case ProtocolErrorCode.InvalidParams:
        // Servers on the current spec answer a call of an unknown tool with invalid params; the SDK says so
        // in its message. That is the caller naming a tool the server lacks, not bad arguments.
        return new ToolError(
          /\bTool \S+ not found\b/.test(e.message) ? "TOOL_NOT_FOUND" : "TOOL_INVALID_ARGS",
          tool,
          `${tool}: ${stripMcpPrefix(e.message)}`,
          { cause: e },
        );
      case ProtocolErrorCode.MethodNotFound:
        return new ToolError("TOOL_NOT_FOUND", tool, `${tool}: ${stripMcpPrefix(e.message)}`, { cause: e });
      default:
        return new ToolError("TOOL_ERROR", tool, `${tool}: ${stripMcpPrefix(e.message)}`, { cause: e });
    }
  }
  const msg = errorMessage(e);
  if (/not connected|EPIPE|ECONNRESET|ECONNREFUSED|fetch failed|Streamable HTTP error/i.test(msg)) {
    return new ToolError("SERVER_UNAVAILABLE", tool, `server "${server}" is unreachable: ${msg}`, {
      cause: e,
    });
  }
  return new ToolError("TOOL_ERROR", tool, `${tool}: ${msg}`, { cause: e });
}

function timedOut(tool: string, timeoutMs: number, cause: unknown): ToolError {
  return new ToolError("TOOL_TIMEOUT", tool, `${tool} did not answer within ${timeoutMs} ms (cancelled)`, {
    cause,
  });
}

function crashed(
  tool: string,
  server: string,
  cause: unknown,
  exitInfo: () => string | undefined,
): ToolError {
  const how = exitInfo();
  return new ToolError(
    "SERVER_CRASHED",
    tool,
    `server "${server}" went away during the call to ${tool}${how ? `: the process ${how}` : ""}; the call was not retried`,
    { cause },
  );
}

const BROKEN_OUTPUT =
  /Structured content does not match the tool's output schema|has an output schema but did not return structured content/;

function stripMcpPrefix(message: string): string {
  return message.replace(/^MCP error -?\d+: /, "");
}
