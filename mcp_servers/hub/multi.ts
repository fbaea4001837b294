/**
 * MultiMCP: the client hub. Connects every enabled server in parallel (one failing does not stop the
 * others) — or, given a tool-list cache, only those whose tools are not cached; the others start at the first
 * call of one of their tools. Keeps the sessions open, routes calls by `server.tool` or a unique plain name, validates
 * arguments first, records every call, and closes everything on close().
 */
import { getDefaultEnvironment } from "@modelcontextprotocol/client/stdio";
import {
  ProtocolError,
  type Client,
  type ElicitRequest,
  type GetPromptResult,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplateType as ResourceTemplate,
} from "@modelcontextprotocol/client";
import {
  ToolError,
  stripControls,
  systemClock,
  validateArgs,
  type CallOptions,
  type Clock,
  type DownServer,
  type CachedToolList,
  type ToolListCache,
  type ToolCallRecord,
  type ToolHost,
  type ToolInfo,
} from "../../core/index.js";
import { hubConfigFromObject, loadHubConfig, type HubConfig, type HubConfigInput } from "./config.js";
import { toolListKey } from "./cache-key.js";
import {
  SAMPLING_REJECTED,
  ServerConnection,
  toRoot,
  type ElicitationHandler,
  type SamplingHandler,
} from "./connection.js";
import type { HubEvent, HubEventListener, ServerStatus } from "./events.js";
import { cleanError, cleanEvent } from "./edge.js";
import { LogLimiter } from "./log-limit.js";
import { SEPARATOR, buildRoutes, resolveName, type Routes } from "./names.js";
import { errorText, resultValue } from "./result.js";
import type { SpawnFn } from "./stdio.js";

export interface MultiMCPOptions {
  clock?: Clock;
  /** Spawn function for stdio servers (tests and benches count or wrap spawns). */
  spawn?: SpawnFn;
  /** Only these server ids are started (others are reported as disabled). */
  only?: string[];
  /** Environment stdio servers inherit before their own `env` (default: the MCP SDK's safe subset). */
  baseEnv?: NodeJS.ProcessEnv;
  /**
   * Servers' tool lists kept between runs. With it, a server whose list is cached is not started until a call
   * needs it (state "cached"); without it every enabled server starts at start().
   */
  cache?: ToolListCache;
  /** Start every server and store its list again, whatever the cache holds (`pda tools --refresh`). */
  refresh?: boolean;
  /** Folders servers may work in (roots/list) unless their config names theirs. Default: the working directory. */
  roots?: string[];
  /** Listeners attached before the first connect, so start-up events are not missed. */
  onEvent?: HubEventListener;
  onCall?: (record: ToolCallRecord) => void;
}

/** Default elicitation answer until a human channel is attached. */
const declineElicitation: ElicitationHandler = async () => ({
  action: "decline",
  reason: "no human channel is attached to this hub, so the request was declined",
});

/** Default sampling answer until a model is attached (pda call/exec, tests). */
const refuseSampling: SamplingHandler = async () => {
  throw new ProtocolError(SAMPLING_REJECTED, "no model is attached to this hub, so sampling was refused");
};

export class MultiMCP implements ToolHost {
  private readonly servers = new Map<string, ServerConnection>();
  private readonly callListeners = new Set<(record: ToolCallRecord) => void>();
  private readonly eventListeners = new Set<HubEventListener>();
  private elicitationHandler: ElicitationHandler = declineElicitation;
  private samplingHandler: SamplingHandler = refuseSampling;
  private roots: string[] = [process.cwd()];
  private routes: Routes<ServerConnection> = buildRoutes([]);
  /** Tool name warnings already emitted, so a tools/list_changed does not repeat them. */
  private readonly warned = new Set<string>();
  private readonly clock: Clock;
  private readonly logs: LogLimiter;
  private closed = false;

  private constructor(config: HubConfig, options: MultiMCPOptions) {
    this.clock = options.clock ?? systemClock;
    this.logs = new LogLimiter(() => this.clock.now());
    if (options.onEvent) this.eventListeners.add(options.onEvent);
    if (options.onCall) this.callListeners.add(options.onCall);
    const baseEnv = options.baseEnv ?? getDefaultEnvironment();
    if (options.roots) this.roots = [...options.roots];
    const cache = options.cache;
    for (const server of config.servers) {
      const enabled = server.enabled && (!options.only || options.only.includes(server.id));
      const conn = new ServerConnection(
        { ...server, enabled },
        {
          clock: this.clock,
          emit: (e) => this.emit(e),
          listening: () => this.eventListeners.size > 0,
          spawn: options.spawn,
          elicit: () => this.elicitationHandler,
          sample: () => this.samplingHandler,
          onTools: () => this.rebuildTools(),
          ...(cache && { onList: (list: CachedToolList) => cache.put(toolListKey(server), server.id, list) }),
          baseEnv,
          roots: () => this.roots.map(toRoot),
        },
      );
      this.servers.set(server.id, conn);
    }
  }

  /**
   * Load the config (a file path, or an object in our or the desktop shape), connect every enabled server
   * in parallel and resolve once each has connected or failed. Failures are in status(), not thrown.
   */
  static async start(
    config: string | HubConfig | HubConfigInput,
    options: MultiMCPOptions = {},
  ): Promise<MultiMCP> {
    const parsed = typeof config === "string" ? loadHubConfig(config) : hubConfigFromObject(config);
    const hub = new MultiMCP(parsed, options);
    const cache = options.refresh ? undefined : options.cache;
    const starting: Promise<void>[] = [];
    for (const conn of hub.servers.values()) {
      if (conn.state === "disabled") continue;
      const cached = cache?.get(toolListKey(conn.config));
      if (cached) conn.useCached(cached);
      else starting.push(conn.connect());
    }
    await Promise.allSettled(starting);
    return hub;
  }

  tools(): ToolInfo[] {
    return this.routes.list;
  }

  status(): ServerStatus[] {
    return [...this.servers.values()].map((s) => {
      const warnings = this.routes.warnings.filter((w) => w.server === s.id).map((w) => w.message);
      const status = s.status();
      if (status.lastError !== undefined) status.lastError = stripControls(status.lastError);
      return warnings.length ? { ...status, warnings } : status;
    });
  }

  /** The servers that are down now (failed to start or crashed), of the enabled ones. */
  availability(): { down: DownServer[]; enabled: number } {
    const enabled = [...this.servers.values()].filter((c) => c.state !== "disabled");
    const down = enabled
      .filter((c) => c.state === "failed" || c.state === "crashed")
      .map((c) => ({
        server: c.id,
        description: c.config.description,
        reason: c.lastError ?? "unknown error",
        tools: c.tools.map((t) => t.name),
      }));
    return { down, enabled: enabled.length };
  }

  onCall(listener: (record: ToolCallRecord) => void): () => void {
    this.callListeners.add(listener);
    return () => this.callListeners.delete(listener);
  }

  onEvent(listener: HubEventListener): () => void {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }

  /**
   * The folders servers without roots of their own may work in; each live one is notified and asks again.
   */
  setRoots(roots: string[]): void {
    this.roots = [...roots];
    for (const conn of this.servers.values()) conn.rootsChanged();
  }

  /** Who answers servers' `elicitation/create` requests (the human channel). Default: decline, with a reason. */
  setElicitationHandler(handler: ElicitationHandler | undefined): void {
    this.elicitationHandler = handler ?? declineElicitation;
  }

  /**
   * Who answers servers' `sampling/createMessage` requests (a model, the person approving as each server's
   * `sampling` setting says). Default: refused, with a reason.
   */
  setSamplingHandler(handler: SamplingHandler | undefined): void {
    this.samplingHandler = handler ?? refuseSampling;
  }

  private emit(raw: HubEvent): void {
    const kept = raw.type === "log" ? this.logs.admit(raw) : raw;
    if (kept) this.deliver(cleanEvent(kept));
  }

  private deliver(event: HubEvent): void {
    for (const listener of this.eventListeners) {
      try {
        listener(event);
      } catch {
        // a listener's bug must not break the hub
      }
    }
  }

  private rebuildTools(): void {
    this.routes = buildRoutes(this.servers.values());
    for (const w of this.routes.warnings) {
      const key = `${w.server}\0${w.message}`;
      if (this.warned.has(key)) continue;
      this.warned.add(key);
      this.emit({ type: "tool_warning", ...w });
    }
  }

  private resolve(name: string): { conn: ServerConnection; info?: ToolInfo; tool: string } {
    return resolveName(name, this.servers, this.routes);
  }

  async call(name: string, args: Record<string, unknown> = {}, options: CallOptions = {}): Promise<unknown> {
    const started = this.clock.now();
    const startedAt = isoTime(started);
    // Until resolved, the record names a server only if the name's prefix is a configured one.
    const prefix = name.slice(0, Math.max(0, name.indexOf(SEPARATOR)));
    let server = this.servers.has(prefix) ? prefix : "";
    let tool = name;
    let bytes = 0;
    try {
      if (this.closed) throw new ToolError("SERVER_UNAVAILABLE", name, "the hub is closed");
      const target = this.resolve(name);
      server = target.conn.id;
      tool = target.tool;
      const qualified = target.info?.qualified ?? `${server}.${tool}`;
      if (args === null || typeof args !== "object" || Array.isArray(args)) {
        throw new ToolError(
          "TOOL_INVALID_ARGS",
          qualified,
          `${qualified}: arguments must be an object of named values`,
        );
      }
      const sent = target.info ? validateArgs(qualified, target.info.inputSchema, args) : args;
      const timeoutMs = Math.min(options.timeoutMs ?? Infinity, target.conn.config.timeout_ms);
      options.onSend?.();
      const answer = await target.conn.call(tool, sent, { signal: options.signal, timeoutMs, qualified });
      const result = answer.result;
      bytes = answer.bytes;
      if (result.isError) throw new ToolError("TOOL_ERROR", qualified, `${qualified}: ${errorText(result)}`);
      const value = resultValue(result);
      this.record(options, {
        server,
        tool,
        ok: true,
        latency_ms: this.clock.now() - started,
        bytes,
        started_at: startedAt,
      });
      return value;
    } catch (e) {
      const error = cleanError(
        e instanceof ToolError
          ? e
          : new ToolError("TOOL_ERROR", name, `${name}: ${(e as Error)?.message ?? String(e)}`, { cause: e }),
      );
      this.record(options, {
        server,
        tool,
        ok: false,
        error_kind: error.code,
        error_message: error.message,
        latency_ms: this.clock.now() - started,
        bytes,
        started_at: startedAt,
      });
      throw error;
    }
  }

  private record(options: CallOptions, record: ToolCallRecord): void {
    try {
      options.onRecord?.(record);
    } catch {
      // the caller's bug must not fail the call
    }
    for (const listener of this.callListeners) {
      try {
        listener(record);
      } catch {
        // a listener's bug must not fail the call
      }
    }
    const dropped = this.logs.callEnded(record.server);
    if (dropped) this.deliver(dropped);
  }

  /** Resources of every ready server (servers without the capability are skipped). */
  /** Resources of one server, or of every live one (a server without resources gives none). */
  listResources(server?: string): Promise<(Resource & { server: string })[]> {
    return this.listAll(server, "resources/list", "resources", async (client, cursor, timeout) => {
      const page = await client.listResources(cursor ? { cursor } : undefined, { timeout });
      return { items: page.resources, nextCursor: page.nextCursor };
    });
  }

  /** Resource templates (URIs with `{placeholders}`), like listResources. */
  listResourceTemplates(server?: string): Promise<(ResourceTemplate & { server: string })[]> {
    return this.listAll(server, "resources/templates/list", "resources", async (client, cursor, timeout) => {
      const page = await client.listResourceTemplates(cursor ? { cursor } : undefined, { timeout });
      return { items: page.resourceTemplates, nextCursor: page.nextCursor };
    });
  }

  /** Prompts the servers offer (name, description, arguments), like listResources. */
  listPrompts(server?: string): Promise<(Prompt & { server: string })[]> {
    return this.listAll(server, "prompts/list", "prompts", async (client, cursor, timeout) => {
      const page = await client.listPrompts(cursor ? { cursor } : undefined, { timeout });
      return { items: page.prompts, nextCursor: page.nextCursor };
    });
  }

  readResource(server: string, uri: string): Promise<ReadResourceResult> {
    return this.ask(server, "resources/read", `reading ${uri} from ${server}`, (client, timeout) =>
      client.readResource({ uri }, { timeout }),
    );
  }

  /** A prompt's messages, its arguments filled in (strings, as MCP has them). */
  getPrompt(server: string, name: string, args: Record<string, string> = {}): Promise<GetPromptResult> {
    return this.ask(server, "prompts/get", `getting prompt ${name} from ${server}`, (client, timeout) =>
      client.getPrompt({ name, arguments: args }, { timeout }),
    );
  }

  private async listAll<T>(
    server: string | undefined,
    method: string,
    capability: "resources" | "prompts",
    page: (
      client: Client,
      cursor: string | undefined,
      timeout: number,
    ) => Promise<{ items: T[]; nextCursor?: string }>,
  ): Promise<(T & { server: string })[]> {
    const conns = server
      ? [this.connection(server)]
      : [...this.servers.values()].filter((c) => c.state === "ready" || c.state === "cached");
    const lists = await Promise.all(
      conns.map(async (conn) => {
        const out: (T & { server: string })[] = [];
        await conn.request(method, async (client) => {
          if (!client.getServerCapabilities()?.[capability]) return;
          let cursor: string | undefined;
          do {
            const got = await page(client, cursor, conn.config.timeout_ms);
            out.push(...got.items.map((item) => ({ ...item, server: conn.id })));
            cursor = got.nextCursor;
          } while (cursor);
        });
        return out;
      }),
    );
    return lists.flat();
  }

  /** One request to one server; a failure is a ToolError named `server.method` that says what was asked. */
  private async ask<T>(
    server: string,
    method: string,
    what: string,
    fn: (client: Client, timeout: number) => Promise<T>,
  ): Promise<T> {
    const conn = this.connection(server);
    try {
      return await conn.request(method, (client) => fn(client, conn.config.timeout_ms));
    } catch (e) {
      if (e instanceof ToolError) throw cleanError(e);
      throw cleanError(
        new ToolError("TOOL_ERROR", `${server}.${method}`, `${what}: ${(e as Error).message}`, { cause: e }),
      );
    }
  }

  private connection(server: string): ServerConnection {
    const conn = this.servers.get(server);
    if (!conn) {
      const known = [...this.servers.keys()].join(", ");
      throw new ToolError(
        "SERVER_UNAVAILABLE",
        server,
        `no server named "${server}" (known: ${known || "none"})`,
      );
    }
    return conn;
  }

  /** Close every session and end every process this hub started. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.servers.values()].map((s) => s.close()));
    for (const dropped of this.logs.flush()) this.deliver(dropped);
  }
}

let isoSecond = NaN;
let isoPrefix = "";
/**
 * `new Date(ms).toISOString()`, reusing the date and time up to the second while it stays the same:
 * formatting a Date in full for every call's record was a visible part of the hub's per-call cost.
 */
export function isoTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  // Years 1970 to 9999 only: others have another prefix (and are never the real clock).
  if (!(second >= 0 && second < 253_402_300_800)) return new Date(ms).toISOString();
  if (second !== isoSecond) {
    isoPrefix = new Date(second * 1000).toISOString().slice(0, 20);
    isoSecond = second;
  }
  const milli = Math.floor(ms) - second * 1000;
  return `${isoPrefix}${milli < 10 ? "00" : milli < 100 ? "0" : ""}${milli}Z`;
}

export type { ElicitationHandler, ElicitRequest, SamplingHandler };
export { SAMPLING_REJECTED };
