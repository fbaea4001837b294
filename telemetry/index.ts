/**
 * telemetry/: sessions, model calls, tool calls, CODE steps, human questions, sub-agents and batch runs as
 * OpenTelemetry traces and GenAI metrics, sent live over OTLP or later from the store (`pda export --otel`).
 * This door imports no OpenTelemetry package: the SDK is loaded only when export is on.
 */
import { otelSettings, type OtelRequest } from "./settings.js";
import type { Telemetry } from "./types.js";

export {
  otelSettings,
  OTLP_PROTOCOLS,
  type OtelRequest,
  type OtelSettings,
  type OtlpProtocol,
} from "./settings.js";
export type { StoredSessions, Telemetry } from "./types.js";

export interface OpenTelemetryOptions extends OtelRequest {
  /** The store's redaction: captured content and error messages go out as the store would keep them. */
  redact: (text: string) => string;
  warn?: (message: string) => void;
}

/** The telemetry when export is requested (see otelSettings), else undefined without loading the SDK. */
export async function openTelemetry(opts: OpenTelemetryOptions): Promise<Telemetry | undefined> {
  const settings = otelSettings(opts);
  if (!settings) return undefined;
  const { startTelemetry } = await import("./sdk.js");
  return startTelemetry(settings, opts);
}
