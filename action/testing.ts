/**
 * A ToolHost that runs tools as plain functions in this process: the test double of MultiMCP for sandbox and
 * loop tests and for benchmarks' baselines. Same contract as the hub: tools by qualified or unique plain
 * name, failures as ToolError with a code, one record per finished call, the call's AbortSignal honoured.
 */
import {
  ToolError,
  errorMessage,
  type CallOptions,
  type ToolCallRecord,
  type ToolHost,
  type ToolInfo,
} from "../core/index.js";
import { encode } from "./codec.js";

export interface InProcessTool {
  server: string;
  name: string;
  description?: string;
  /** JSON Schema of the arguments (what an MCP server lists as inputSchema). */
  inputSchema?: Record<string, unknown>;
  /** What an MCP server's readOnlyHint or idempotentHint tells: a call in doubt may be made again. */
  safeToRepeat?: boolean;
  /** Returns the tool's value; throw ToolError (or anything: it becomes TOOL_ERROR) to fail. */
  handler: (args: Record<string, unknown>, options: CallOptions) => unknown;
}

export class InProcessToolHost implements ToolHost {
  /** Every call that reached a handler, in order, with the arguments exactly as received. */
  readonly received: { name: string; args: Record<string, unknown> }[] = [];
  private readonly list: ToolInfo[];
  private readonly byName = new Map<string, InProcessTool & { info: ToolInfo }>();
  private readonly listeners = new Set<(record: ToolCallRecord) => void>();

  constructor(tools: InProcessTool[]) {
    const count = new Map<string, number>();
    for (const t of tools) count.set(t.name, (count.get(t.name) ?? 0) + 1);
    this.list = tools.map((t) => ({
      server: t.server,
      name: t.name,
      qualified: `${t.server}.${t.name}`,
      unique: count.get(t.name) === 1,
      description: t.description ?? "",
      inputSchema: t.inputSchema ?? { type: "object", properties: {} },
      ...(t.safeToRepeat && { safeToRepeat: true }),
    }));
    tools.forEach((t, i) => {
      const info = this.list[i]!;
      this.byName.set(info.qualified, { ...t, info });
      if (info.unique) this.byName.set(t.name, { ...t, info });
    });
  }

  tools(): ToolInfo[] {
    return this.list;
  }

  onCall(listener: (record: ToolCallRecord) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async call(name: string, args: Record<string, unknown>, options: CallOptions = {}): Promise<unknown> {
    const tool = this.byName.get(name);
    if (!tool) throw new ToolError("TOOL_NOT_FOUND", name, `no tool named "${name}"`);
    const started = performance.now();
    const startedAt = new Date().toISOString();
    const emit = (ok: boolean, bytes: number, error?: ToolError) => {
      const record: ToolCallRecord = {
        server: tool.server,
        tool: tool.name,
        ok,
        ...(error && { error_kind: error.code, error_message: error.message }),
        latency_ms: performance.now() - started,
        bytes,
        started_at: startedAt,
      };
      for (const l of this.listeners) l(record);
    };
    this.received.push({ name: tool.info.qualified, args });
    try {
      const value = await abortable(
        Promise.resolve(tool.handler(args, options)),
        tool.info.qualified,
        options.signal,
      );
      emit(true, Buffer.byteLength(encode(value)));
      return value;
    } catch (e) {
      const error =
        e instanceof ToolError
          ? e
          : new ToolError("TOOL_ERROR", tool.info.qualified, `${tool.info.qualified}: ${errorMessage(e)}`);
      emit(false, 0, error);
      throw error;
    }
  }
}

function abortable<T>(promise: Promise<T>, tool: string, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  const cancelled = () => new ToolError("TOOL_CANCELLED", tool, `call to ${tool} was cancelled`);
  if (signal.aborted) return Promise.reject(cancelled());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(cancelled());
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

const pair = {
  type: "object",
  properties: { a: { type: "number" }, b: { type: "number" } },
  required: ["a", "b"],
  additionalProperties: false,
};

/** A few calculator tools on server "math" (divide by zero fails with TOOL_ERROR, like the real server). */
export function mathTools(): InProcessTool[] {
  const binary = (name: string, f: (a: number, b: number) => number): InProcessTool => ({
    server: "math",
    name,
    inputSchema: pair,
    handler: ({ a, b }) => f(a as number, b as number),
  });
  return [
    binary("add", (a, b) => a + b),
    binary("subtract", (a, b) => a - b),
    binary("multiply", (a, b) => a * b),
    {
      server: "math",
      name: "divide",
      inputSchema: pair,
      handler: ({ a, b }) => {
        if (b === 0) throw new ToolError("TOOL_ERROR", "math.divide", "math.divide: division by zero");
        return (a as number) / (b as number);
      },
    },
  ];
}
