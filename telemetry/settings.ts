/**
 * Whether OpenTelemetry export is on and how, from the standard OTEL_* variables, `--otel` and the profile's
 * `otel:`. Plain code with no SDK import: every command asks this, and a run without OTel must not load the SDK.
 */
import { ConfigError } from "../core/index.js";

export const OTLP_PROTOCOLS = ["http/protobuf", "http/json", "grpc"] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

export interface OtelSettings {
  protocol: OtlpProtocol;
  metricsProtocol: OtlpProtocol;
  traces: boolean;
  metrics: boolean;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: prompts, responses and human answers go on spans. */
  captureContent: boolean;
}

export interface OtelRequest {
  /** `--otel` on the command line. */
  flag?: boolean;
  /** The profile's `otel:`. */
  profile?: boolean;
  env?: NodeJS.ProcessEnv;
}

const isTrue = (v: string | undefined) => v?.trim().toLowerCase() === "true";

function protocol(value: string | undefined, name: string): OtlpProtocol | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  const p = value.trim().toLowerCase();
  if ((OTLP_PROTOCOLS as readonly string[]).includes(p)) return p as OtlpProtocol;
  throw new ConfigError(`${name}=${value}: not an OTLP protocol (use ${OTLP_PROTOCOLS.join(", ")})`);
}

/** An exporter variable (OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER): on unless it is "none". */
function exporterOn(value: string | undefined, name: string): boolean {
  const v = value?.trim().toLowerCase();
  if (!v || v === "otlp") return true;
  if (v === "none") return false;
  throw new ConfigError(`${name}=${value}: pda exports with "otlp" (or "none" for no export)`);
}

/**
 * The settings when export is requested (an OTLP endpoint variable, `--otel` or `otel: true`), else undefined.
 * OTEL_SDK_DISABLED=true turns it off whatever asks for it, as the specification says.
 */
export function otelSettings(req: OtelRequest): OtelSettings | undefined {
  const env = req.env ?? process.env;
  if (isTrue(env.OTEL_SDK_DISABLED)) return undefined;
  const endpoint = [
    env.OTEL_EXPORTER_OTLP_ENDPOINT,
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
  ].some((v) => !!v?.trim());
  if (!req.flag && !req.profile && !endpoint) return undefined;
  const base = protocol(env.OTEL_EXPORTER_OTLP_PROTOCOL, "OTEL_EXPORTER_OTLP_PROTOCOL") ?? "http/protobuf";
  return {
    protocol: protocol(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ?? base,
    metricsProtocol:
      protocol(env.OTEL_EXPORTER_OTLP_METRICS_PROTOCOL, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL") ?? base,
    traces: exporterOn(env.OTEL_TRACES_EXPORTER, "OTEL_TRACES_EXPORTER"),
    metrics: exporterOn(env.OTEL_METRICS_EXPORTER, "OTEL_METRICS_EXPORTER"),
    captureContent: isTrue(env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT),
  };
}
