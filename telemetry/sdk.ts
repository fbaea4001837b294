/**
 * The OpenTelemetry SDK, set up from the standard OTEL_* variables: a tracer provider with a batch span
 * processor (a bounded queue, OTEL_BSP_*) and a meter provider, each with the OTLP exporter of the chosen
 * protocol. Loaded only when export is on (telemetry/index.ts imports this file lazily).
 */
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import {
  detectResources,
  envDetector,
  resourceFromAttributes,
  type Resource,
} from "@opentelemetry/resources";
import {
  MeterProvider,
  PeriodicExportingMetricReader,
  type PushMetricExporter,
} from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import { errorMessage } from "../core/index.js";
import { exporterAgents, type ExporterAgents } from "./agents.js";
import { exportBatch, exportStored } from "./export.js";
import { askTimes, tracedRecorder, type Guard } from "./live.js";
import type { OtelSettings, OtlpProtocol } from "./settings.js";
import { SpanWriter, genAiMetrics } from "./spans.js";
import type { Telemetry } from "./types.js";

/** How long exit waits for the last spans to reach the collector while this process sits idle waiting for it. */
export const FLUSH_LIMIT_MS = 3000;
/** However busy this process is (exporting on a starved machine), exit waits for the collector at most this. */
const FLUSH_CAP_MS = 15_000;
const FLUSH_CHECK_MS = 250;

/**
 * Resolves to the wall time waited once the collector has had FLUSH_LIMIT_MS and this process was idle over the
 * last two checks (only the collector is holding the flush up), or at FLUSH_CAP_MS. On a busy machine the
 * export's own work (loading the gRPC client, encoding) is spread over seconds: that is not the collector being
 * slow. Working is 1 % of a CPU or more: a process waiting on a socket uses far less, and one that works on a
 * starved machine far more (beside `stress --cpu 8` on 2 cores, a spinning thread got ~20 %, and at a tenth
 * some checks found it idle).
 */
function flushLimit(): { reached: Promise<number>; cancel(): void } {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const reached = new Promise<number>((resolve) => {
    let last = process.cpuUsage();
    let idleChecks = 0;
    timer = setInterval(() => {
      const elapsed = Date.now() - started;
      const used = process.cpuUsage(last);
      last = process.cpuUsage();
      idleChecks = (used.user + used.system) / 1000 >= FLUSH_CHECK_MS / 100 ? 0 : idleChecks + 1;
      if (elapsed >= FLUSH_CAP_MS || (elapsed >= FLUSH_LIMIT_MS && idleChecks >= 2)) resolve(elapsed);
    }, FLUSH_CHECK_MS);
  });
  return { reached, cancel: () => clearInterval(timer) };
}
const SCOPE = "pda";
const VERSION = "0.1.0";

export interface StartOptions {
  redact: (text: string) => string;
  env?: NodeJS.ProcessEnv;
  /** Where the one warning about a failing collector goes (default stderr). */
  warn?: (message: string) => void;
}

async function traceExporter(protocol: OtlpProtocol, agents: ExporterAgents): Promise<SpanExporter> {
  if (protocol === "grpc")
    return new (await import("@opentelemetry/exporter-trace-otlp-grpc")).OTLPTraceExporter();
  const http = { httpAgentOptions: agents.factory };
  if (protocol === "http/json")
    return new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter(http);
  return new (await import("@opentelemetry/exporter-trace-otlp-proto")).OTLPTraceExporter(http);
}

async function metricExporter(protocol: OtlpProtocol, agents: ExporterAgents): Promise<PushMetricExporter> {
  if (protocol === "grpc")
    return new (await import("@opentelemetry/exporter-metrics-otlp-grpc")).OTLPMetricExporter();
  const http = { httpAgentOptions: agents.factory };
  if (protocol === "http/json")
    return new (await import("@opentelemetry/exporter-metrics-otlp-http")).OTLPMetricExporter(http);
  return new (await import("@opentelemetry/exporter-metrics-otlp-proto")).OTLPMetricExporter(http);
}

/**
 * A collector in trouble (down, slow, or answering errors) is said once, whether an export failed or the last
 * flush at exit ran out of time; the spans are dropped.
 */
function onceWarner(warn: (message: string) => void) {
  let warned = false;
  const once = (message: string) => {
    if (warned) return;
    warned = true;
    warn(message);
  };
  return {
    once,
    result(what: string, result: ExportResult) {
      if (result.code === ExportResultCode.SUCCESS) return;
      once(
        `OpenTelemetry: exporting ${what} failed (${errorMessage(result.error ?? "unknown error")}); later failures are not shown`,
      );
    },
  };
}

function resource(): Resource {
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over pda's defaults.
  const defaults = resourceFromAttributes({ [ATTR_SERVICE_NAME]: "pda", [ATTR_SERVICE_VERSION]: VERSION });
  return defaults.merge(detectResources({ detectors: [envDetector] }));
}

export async function startTelemetry(settings: OtelSettings, opts: StartOptions): Promise<Telemetry> {
  const env = opts.env ?? process.env;
  const warn = opts.warn ?? ((m: string) => void process.stderr.write(`pda: ${m}\n`));
  const failed = onceWarner(warn);
  const res = resource();

  const agents = exporterAgents();
  const spans = settings.traces ? await traceExporter(settings.protocol, agents) : undefined;
  const tracerProvider = new BasicTracerProvider({
    resource: res,
    spanProcessors: spans
      ? [
          new BatchSpanProcessor({
            export: (s, done) => spans.export(s, (r) => (failed.result("spans", r), done(r))),
            shutdown: () => spans.shutdown(),
            forceFlush: () => spans.forceFlush?.() ?? Promise.resolve(),
          }),
        ]
      : [],
  });
  const metrics = settings.metrics ? await metricExporter(settings.metricsProtocol, agents) : undefined;
  const meterProvider = metrics
    ? new MeterProvider({
        resource: res,
        readers: [
          new PeriodicExportingMetricReader({
            exporter: {
              export: (m, done) => metrics.export(m, (r) => (failed.result("metrics", r), done(r))),
              forceFlush: () => metrics.forceFlush(),
              shutdown: () => metrics.shutdown(),
              selectAggregationTemporality: metrics.selectAggregationTemporality?.bind(metrics),
              selectAggregation: metrics.selectAggregation?.bind(metrics),
            },
            exportIntervalMillis: Number(env.OTEL_METRIC_EXPORT_INTERVAL) || 60_000,
          }),
        ],
      })
    : undefined;

  const tracer = tracerProvider.getTracer(SCOPE, VERSION);
  const writerOptions = { captureContent: settings.captureContent, redact: opts.redact };
  const live = new SpanWriter(
    tracer,
    meterProvider && genAiMetrics(meterProvider.getMeter(SCOPE, VERSION)),
    writerOptions,
  );
  let guardWarned = false;
  const guard: Guard = (write) => {
    try {
      write();
    } catch (e) {
      if (!guardWarned)
        warn(`OpenTelemetry: a span could not be made (${errorMessage(e)}); later failures are not shown`);
      guardWarned = true;
    }
  };
  const now = () => Date.now();

  return {
    recorder: (inner) => tracedRecorder(inner, live, now, guard),
    events: () => askTimes(live, now, guard),
    batchStart: (runId, attributes) => guard(() => live.batchStart(runId, now(), attributes)),
    batchEnd: (status) => guard(() => live.batchEnd(now(), status)),
    exportSession: (store, id) => exportStored(new SpanWriter(tracer, undefined, writerOptions), store, id),
    exportBatch: (store, runId) =>
      exportBatch(new SpanWriter(tracer, undefined, writerOptions), store, runId),
    async shutdown() {
      const limit = flushLimit();
      const waited = await Promise.race([
        Promise.allSettled([tracerProvider.shutdown(), meterProvider?.shutdown()]).then(() => undefined),
        limit.reached,
      ]);
      limit.cancel();
      if (waited === undefined) return;
      failed.once(
        waited >= FLUSH_CAP_MS
          ? `OpenTelemetry: the last spans were not exported within ${FLUSH_CAP_MS / 1000} s, although this process kept working (the machine may be overloaded); they are dropped`
          : `OpenTelemetry: the collector did not take the last spans within ${FLUSH_LIMIT_MS / 1000} s; they are dropped`,
      );
      // What the collector still holds must not hold the process beyond the limit.
      agents.cut();
    },
  };
}
