import { describe, expect, it } from "vitest";
import { ConfigError } from "../core/index.js";
import { otelSettings } from "./settings.js";

describe("otelSettings", () => {
  it("is off unless an OTLP endpoint variable, --otel or the profile asks", () => {
    expect(otelSettings({ env: {} })).toBeUndefined();
    expect(otelSettings({ env: { OTEL_SERVICE_NAME: "x" } })).toBeUndefined();
    expect(otelSettings({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" } })?.protocol).toBe(
      "http/protobuf",
    );
    expect(otelSettings({ env: { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "http://c" } })).toBeDefined();
    expect(otelSettings({ env: {}, flag: true })).toBeDefined();
    expect(otelSettings({ env: {}, profile: true })).toBeDefined();
  });

  it("OTEL_SDK_DISABLED=true wins over everything", () => {
    expect(
      otelSettings({
        env: { OTEL_SDK_DISABLED: "TRUE", OTEL_EXPORTER_OTLP_ENDPOINT: "http://c" },
        flag: true,
      }),
    ).toBeUndefined();
  });

  it("reads the protocols per signal, the exporters and content capture", () => {
    const s = otelSettings({
      flag: true,
      env: {
        OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
        OTEL_METRICS_EXPORTER: "none",
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true",
      },
    });
    expect(s).toEqual({
      protocol: "http/json",
      metricsProtocol: "grpc",
      traces: true,
      metrics: false,
      captureContent: true,
    });
    expect(otelSettings({ flag: true, env: {} })?.captureContent).toBe(false);
  });

  it("a bad protocol or exporter is a ConfigError naming the variable", () => {
    expect(() => otelSettings({ flag: true, env: { OTEL_EXPORTER_OTLP_PROTOCOL: "udp" } })).toThrow(
      new ConfigError(
        "OTEL_EXPORTER_OTLP_PROTOCOL=udp: not an OTLP protocol (use http/protobuf, http/json, grpc)",
      ),
    );
    expect(() => otelSettings({ flag: true, env: { OTEL_TRACES_EXPORTER: "zipkin" } })).toThrow(
      /OTEL_TRACES_EXPORTER=zipkin/,
    );
  });
});
