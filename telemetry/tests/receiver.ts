/**
 * An OTLP receiver for tests, on 127.0.0.1: it keeps what the real exporters send, over http/json, http/protobuf
 * and gRPC, each decoded into flat spans and metric names. Protobuf (http and gRPC) is decoded with the official
 * OTLP definitions (./proto, from open-telemetry/opentelemetry-proto) through @grpc/proto-loader, the loader
 * the gRPC exporter itself depends on: nothing here knows the wire format.
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";

export interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  kind: number;
  /** Epoch milliseconds (fractional). */
  start: number;
  end: number;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
  resource: Record<string, unknown>;
  /** How it came: "http/json", "http/protobuf" or "grpc". */
  protocol: string;
}

export interface Receiver {
  /** The OTLP/HTTP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT). */
  url: string;
  /** The OTLP/gRPC endpoint: the trace and metrics services. */
  grpcUrl: string;
  spans: ReceivedSpan[];
  metrics: string[];
  /** HTTP requests taken that the collector has not answered yet (a slow or hanging one holds them). */
  holding(): number;
  /** Every HTTP request: path, content type, headers and body. */
  raw: Array<{ path: string; contentType: string; headers: IncomingMessage["headers"]; body: Buffer }>;
  /** Waits (polling, up to a generous deadline) until `ok()` holds; throws naming what was received. */
  until(ok: () => boolean, what: string): Promise<void>;
  reset(): void;
  close(): Promise<void>;
}

const PROTO_DIR = fileURLToPath(new URL("./proto", import.meta.url));
const TRACE_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService";
const METRICS_SERVICE = "opentelemetry.proto.collector.metrics.v1.MetricsService";

/**
 * The OTLP collector services. Field names in lowerCamelCase as OTLP/JSON has them, 64-bit integers as
 * strings, enums as numbers, no defaults: a decoded protobuf request has the shape of a JSON one, but for
 * ids, which are bytes rather than hex.
 */
const OTLP = loadSync(
  [
    "opentelemetry/proto/collector/trace/v1/trace_service.proto",
    "opentelemetry/proto/collector/metrics/v1/metrics_service.proto",
  ],
  { includeDirs: [PROTO_DIR], longs: String, enums: Number, defaults: false, keepCase: false },
);
const service = (name: string) => OTLP[name] as grpc.ServiceDefinition;
const decodeTraces = (body: Buffer) => service(TRACE_SERVICE).Export!.requestDeserialize(body) as unknown;
const decodeMetrics = (body: Buffer) => service(METRICS_SERVICE).Export!.requestDeserialize(body) as unknown;

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
};
type KeyValue = { key: string; value: AnyValue };

const value = (v: AnyValue): unknown =>
  v.stringValue ??
  (v.intValue !== undefined ? Number(v.intValue) : undefined) ??
  v.doubleValue ??
  v.boolValue ??
  v.arrayValue?.values?.map(value);

const attrs = (list: KeyValue[] | undefined) =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, value(kv.value)]));

/** An id as OTLP/JSON writes it (hex); protobuf carries the bytes. */
const hex = (id: unknown) => (Buffer.isBuffer(id) ? id.toString("hex") : (id as string | undefined));

/** Nanoseconds since the epoch (a string or a number) in ms. */
function millis(t: unknown): number {
  const ns = BigInt(t as string | number);
  return Number(ns / 1000n) / 1000;
}

async function body(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const p of req) parts.push(p as Buffer);
  return Buffer.concat(parts);
}

/**
 * A collector in trouble: every HTTP request answered with `status` (e.g. 503), never answered (`hang`), or
 * taken and answered (with success) only `delayMs` later, or when the receiver closes, whichever is first.
 */
export interface ReceiverFaults {
  status?: number;
  hang?: boolean;
  delayMs?: number;
}

export async function startReceiver(faults: ReceiverFaults = {}): Promise<Receiver> {
  const r: Omit<Receiver, "url" | "grpcUrl" | "close" | "holding"> = {
    spans: [],
    metrics: [],
    raw: [],
    async until(ok, what) {
      const deadline = Date.now() + 60_000;
      while (!ok()) {
        if (Date.now() > deadline)
          throw new Error(`no ${what} after 60 s; spans: ${r.spans.map((s) => s.name).join(", ")}`);
        await new Promise((res) => setTimeout(res, 50));
      }
    },
    reset() {
      r.spans.length = 0;
      r.metrics.length = 0;
      r.raw.length = 0;
    },
  };
  /** An ExportTraceServiceRequest, from JSON or decoded protobuf. */
  const traces = (request: unknown, protocol: string) => {
    for (const rs of ((request as Record<string, unknown>).resourceSpans ?? []) as Array<{
      resource?: { attributes?: KeyValue[] };
      scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }>;
    }>) {
      const resource = attrs(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? [])
        for (const s of ss.spans ?? [])
          r.spans.push({
            name: s.name as string,
            traceId: hex(s.traceId)!,
            spanId: hex(s.spanId)!,
            parentSpanId: hex(s.parentSpanId) || undefined,
            kind: s.kind as number,
            start: millis(s.startTimeUnixNano),
            end: millis(s.endTimeUnixNano),
            attributes: attrs(s.attributes as KeyValue[]),
            status: (s.status ?? {}) as ReceivedSpan["status"],
            resource,
            protocol,
          });
    }
  };
  /** An ExportMetricsServiceRequest: the names of the metrics in it. */
  const metrics = (request: unknown) => {
    for (const rm of ((request as Record<string, unknown>).resourceMetrics ?? []) as Array<{
      scopeMetrics?: Array<{ metrics?: Array<{ name: string }> }>;
    }>)
      for (const sm of rm.scopeMetrics ?? []) for (const m of sm.metrics ?? []) r.metrics.push(m.name);
  };

  let holding = 0;
  const held = new Set<() => void>();
  const server = createServer((req, res) => {
    void body(req).then(async (b) => {
      const contentType = req.headers["content-type"] ?? "";
      r.raw.push({ path: req.url ?? "", contentType, headers: req.headers, body: b });
      holding += 1;
      if (faults.hang) return;
      if (faults.delayMs) {
        await new Promise<void>((wake) => {
          const early = () => (clearTimeout(timer), held.delete(early), wake());
          const timer = setTimeout(early, faults.delayMs);
          held.add(early);
        });
      }
      holding -= 1;
      if (res.destroyed) return; // the exporter gave up on it (or its process is gone)
      if (faults.status) {
        res.writeHead(faults.status, { "content-type": "text/plain" });
        res.end("collector in trouble");
        return;
      }
      const json = contentType.includes("json");
      const protobuf = contentType.includes("protobuf");
      try {
        if (req.url === "/v1/traces" && (json || protobuf))
          traces(
            json ? JSON.parse(b.toString("utf8")) : decodeTraces(b),
            json ? "http/json" : "http/protobuf",
          );
        else if (req.url === "/v1/metrics" && (json || protobuf))
          metrics(json ? JSON.parse(b.toString("utf8")) : decodeMetrics(b));
      } catch (e) {
        // A request the official definitions cannot decode is the exporter's fault: the test sees a 400.
        res.writeHead(400, { "content-type": "text/plain" });
        res.end(`undecodable OTLP request: ${(e as Error).message}`);
        return;
      }
      res.writeHead(200, { "content-type": contentType || "application/json" });
      // An empty Export*ServiceResponse, in either encoding.
      res.end(json ? "{}" : "");
    });
  });
  await new Promise<void>((res) => server.listen(0, "127.0.0.1", res));
  const { port } = server.address() as AddressInfo;

  const rpc = new grpc.Server();
  rpc.addService(service(TRACE_SERVICE), {
    Export: (call: grpc.ServerUnaryCall<unknown, unknown>, done: grpc.sendUnaryData<unknown>) => {
      traces(call.request, "grpc");
      done(null, {});
    },
  });
  rpc.addService(service(METRICS_SERVICE), {
    Export: (call: grpc.ServerUnaryCall<unknown, unknown>, done: grpc.sendUnaryData<unknown>) => {
      metrics(call.request);
      done(null, {});
    },
  });
  const grpcPort = await new Promise<number>((res, rej) =>
    rpc.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))),
  );
  return {
    ...r,
    url: `http://127.0.0.1:${port}`,
    grpcUrl: `http://127.0.0.1:${grpcPort}`,
    holding: () => holding,
    close: async () => {
      for (const wake of held) wake();
      rpc.forceShutdown();
      server.closeAllConnections(); // a hanging collector's requests too
      await new Promise<void>((res) => server.close(() => res()));
    },
  } as Receiver;
}
