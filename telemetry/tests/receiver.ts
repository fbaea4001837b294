/**
 * An OTLP/HTTP receiver for tests, on 127.0.0.1: it keeps what the real exporters send. http/json requests
 * are decoded into flat spans and metric names; http/protobuf bodies are kept raw (see `raw`).
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

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
}

export interface Receiver {
  url: string;
  spans: ReceivedSpan[];
  metrics: string[];
  /** Every request: path, content type and body. */
  raw: Array<{ path: string; contentType: string; body: Buffer }>;
  /** Waits (polling, up to a generous deadline) until `ok()` holds; throws naming what was received. */
  until(ok: () => boolean, what: string): Promise<void>;
  reset(): void;
  close(): Promise<void>;
}

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

/** Nanoseconds since the epoch (a string, a number, or the {low, high} of older serializers) in ms. */
function millis(t: unknown): number {
  if (typeof t === "object" && t !== null && "low" in t) {
    const { low, high } = t as { low: number; high: number };
    return Number((BigInt(high >>> 0) << 32n) | BigInt(low >>> 0)) / 1e6;
  }
  const ns = BigInt(t as string | number);
  return Number(ns / 1000n) / 1000;
}

async function body(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const p of req) parts.push(p as Buffer);
  return Buffer.concat(parts);
}

export async function startReceiver(): Promise<Receiver> {
  const r: Omit<Receiver, "url" | "close"> = {
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
  const server = createServer((req, res) => {
    void body(req).then((b) => {
      const contentType = req.headers["content-type"] ?? "";
      r.raw.push({ path: req.url ?? "", contentType, body: b });
      if (contentType.includes("json")) {
        const json = JSON.parse(b.toString("utf8")) as Record<string, unknown>;
        if (req.url === "/v1/traces") {
          for (const rs of (json.resourceSpans ?? []) as Array<{
            resource?: { attributes?: KeyValue[] };
            scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }>;
          }>) {
            const resource = attrs(rs.resource?.attributes);
            for (const ss of rs.scopeSpans ?? [])
              for (const s of ss.spans ?? [])
                r.spans.push({
                  name: s.name as string,
                  traceId: s.traceId as string,
                  spanId: s.spanId as string,
                  parentSpanId: (s.parentSpanId as string | undefined) || undefined,
                  kind: s.kind as number,
                  start: millis(s.startTimeUnixNano),
                  end: millis(s.endTimeUnixNano),
                  attributes: attrs(s.attributes as KeyValue[]),
                  status: (s.status ?? {}) as ReceivedSpan["status"],
                  resource,
                });
          }
        } else if (req.url === "/v1/metrics") {
          for (const rm of (json.resourceMetrics ?? []) as Array<{
            scopeMetrics?: Array<{ metrics?: Array<{ name: string }> }>;
          }>)
            for (const sm of rm.scopeMetrics ?? []) for (const m of sm.metrics ?? []) r.metrics.push(m.name);
        }
      }
      res.writeHead(200, { "content-type": contentType || "application/json" });
      res.end(contentType.includes("json") ? "{}" : "");
    });
  });
  await new Promise<void>((res) => server.listen(0, "127.0.0.1", res));
  const { port } = server.address() as AddressInfo;
  return {
    ...r,
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((res) => server.close(() => res())),
  } as Receiver;
}
