/**
 * One configured server: its transport, its MCP client session, its tools and its state. Connects
 * lazily again after a crash (restart on next use, with backoff); never replays a call.
 */
import { existsSync, statSync } from "node:fs";
import { basename, isAbsolute } from "node:path";
import { pathToFileURL } from "node:url";
import {
  Client,
  ProtocolError,
  type CallToolResult,
  type ConnectOptions,
  type CreateMessageRequest,
  type CreateMessageResult,
  type DiscoverResult,
  type ElicitRequest,
  type ElicitResult,
  LOG_LEVEL_META_KEY,
  type ProtocolEra,
  type Root,
  type Tool,
  type Transport,
  type VersionNegotiationMode,
} from "@modelcontextprotocol/client";
import { ToolError, errorMessage, type CachedToolList, type Clock } from "../../core/index.js";
import { restartDelayMs } from "./backoff.js";
import type { ServerConfig } from "./config.js";
import type { HubEvent, ServerState, ServerStatus } from "./events.js";
import { ChildStdioTransport, type SpawnFn } from "./stdio.js";
import { mapCallError, resultBytes } from "./result.js";
import { CallCancels } from "./cancel.js";
import { httpTransport } from "./http-transport.js";
import { StartTimeout, startWait } from "./startwait.js";
import { snapshotLaunch } from "./snapshot.js";

const cancels = new CallCancels();

export type ElicitationHandler = (
  server: string,
  request: ElicitRequest["params"],
) => Promise<ElicitResult & { reason?: string }>;

/**
 * Who answers a server's `sampling/createMessage` (a model, after the person's approval as `policy` says).
 * Throws to refuse; the message goes back to the server.
 */
export type SamplingHandler = (
  server: string,
  request: CreateMessageRequest["params"],
  context: { policy: "ask" | "allow" | "deny"; signal: AbortSignal },
) => Promise<CreateMessageResult>;

/**
 * A 2026-07-28 server logs only at the level each request carries in its `_meta` envelope (none: no logs). A
 * 2025 server that was never sent `logging/setLevel` sends every level, so the hub asks the same of a modern
 * one: its log lines reach the same events in both eras.
 */
const MODERN_CALL_META = { [LOG_LEVEL_META_KEY]: "debug" } as const;

/** MCP's error code for a sampling request the user (or a policy) rejected. */
export const SAMPLING_REJECTED = -1;

function isDirectory(arg: string): boolean {
  try {
    return isAbsolute(arg) && statSync(arg).isDirectory();
  } catch {
    return false;
  }
}

/** A folder path or URI as an MCP root (file:// URI, named by its last part). */
export function toRoot(pathOrUri: string): Root {
  const uri = /^[a-z][a-z0-9+.-]*:\/\//i.test(pathOrUri) ? pathOrUri : pathToFileURL(pathOrUri).href;
  const name = basename(pathOrUri.replace(/\/+$/, "")) || pathOrUri;
  return { uri, name };
}

export interface ConnectionDeps {
  clock: Clock;
  emit: (event: HubEvent) => void;
  /** Whether anyone listens for events: progress is asked of the server only then. */
  listening: () => boolean;
  spawn?: SpawnFn;
  elicit: () => ElicitationHandler;
  sample: () => SamplingHandler;
  /** Called when the server's tool list changed (after a (re)connect or a list_changed notification). */
  onTools: () => void;
  /** The full list as the server gave it (before allow/deny), each time it is listed: for the cache. */
  onList?: (list: CachedToolList) => void;
  /** Environment for stdio children before the server's own `env` (default: the host's). */
  baseEnv: NodeJS.ProcessEnv;
  /** The hub's roots, for a server whose config names none. */
  roots: () => Root[];
}

/** The protocol era a server spoke last time, as the tool-list cache keeps it (skips `auto`'s probe). */
export type KnownEra = Pick<CachedToolList, "era" | "discover">;

/**
 * How a server's config `protocol` becomes the SDK's negotiation: `2025` the plain initialize handshake,
 * `auto` a `server/discover` probe falling back to it, a dated modern revision pinned. Unset: `auto` over
 * HTTP, `2025` over stdio (a stdio probe goes to a server that may not expect it; the cached era skips it).
 */
function negotiation(config: ServerConfig): VersionNegotiationMode {
  const protocol = config.protocol ?? (config.url ? "auto" : "2025");
  if (protocol === "2025") return "legacy";
  if (protocol === "auto") return "auto";
  return { pin: protocol };
}

/**
 * However busy the machine, a start may take at most this many connect timeouts of wall time, or 60 s; and a
 * start that used a connect timeout's worth of CPU without answering has failed (startwait.ts).
 */
const START_CAP_FACTOR = 10;
const START_CAP_MIN_MS = 60_000;

/** How long a wedged-server probe (a ping after a timeout) may take before the process is killed. */
const PROBE_MS = 2_000;

export class ServerConnection {
  state: ServerState;
  tools: Tool[] = [];
  lastError?: string;
  restarts = 0;
  /** The era and revision the live (or last) session negotiated. */
  era?: ProtocolEra;
  protocolVersion?: string;

  /** The era cached from an earlier run, so `auto` connects without probing. */
  private known?: KnownEra;

  private client?: Client;
  private transport?: Transport;
  private connecting?: Promise<void>;
  /** A liveness check after a timeout; calls wait for it so they do not queue behind a wedged server. */
  private probing?: Promise<void>;
  private failures = 0;
  private retryAt = 0;
  private closing = false;
  private generation = 0;
  private everConnected = false;
  /** Whether the process being started runs from its start-up snapshot (hub/snapshot.ts). */
  private fromSnapshot = false;
  /** Its snapshot failed to start once: from now on it starts from its bundle. */
  private snapshotFailed = false;
  /** Shutdowns of dead or failed sessions still under way; close() waits for them. */
  private readonly shutdowns = new Set<Promise<void>>();

  constructor(
    readonly config: ServerConfig,
    private readonly deps: ConnectionDeps,
  ) {
    this.state = config.enabled ? "connecting" : "disabled";
  }

  get id(): string {
    return this.config.id;
  }

  get pid(): number | undefined {
    return this.transport instanceof ChildStdioTransport ? this.transport.pid : undefined;
  }

  status(): ServerStatus {
    return {
      id: this.id,
      description: this.config.description,
      transport: this.config.url ? (this.config.transport === "sse" ? "sse" : "http") : "stdio",
      state: this.state,
      tools: this.tools.length,
      ...(this.era !== undefined && { era: this.era }),
      ...(this.protocolVersion !== undefined && { protocolVersion: this.protocolVersion }),
      ...(this.lastError !== undefined && { lastError: this.lastError }),
      ...(this.pid !== undefined && this.state === "ready" && { pid: this.pid }),
      restarts: this.restarts,
      ...((this.state === "crashed" || this.state === "failed") && { retryAt: this.retryAt }),
    };
  }

  private setState(state: ServerState, error?: string): void {
    this.state = state;
    if (error !== undefined) this.lastError = error;
    this.deps.emit({
      type: "server_state",
      server: this.id,
      state,
      ...(error && { error }),
      ...(this.pid && { pid: this.pid }),
      ...(state === "connecting" && this.restarts > 0 && { retry: this.restarts }),
    });
  }

  /**
   * What this server is told it may work in: its config's roots; else the folders its command line names (a
   * server such as server-filesystem replaces those with the client's roots, so they must be the roots);
   * else the hub's.
   */
  roots(): Root[] {
    const own = this.ownRoots();
    return own ? own.map(toRoot) : this.deps.roots();
  }

  private ownRoots(): string[] | undefined {
    if (this.config.roots) return this.config.roots;
    const named = this.config.command ? this.config.args.filter(isDirectory) : [];
    return named.length > 0 ? named : undefined;
  }

  /** The hub's roots changed: a live server that follows them is told (it asks roots/list again). */
  rootsChanged(): void {
    // The 2026-07-28 era has no roots notification: a modern server asks for roots with each request.
    if (this.ownRoots() || this.state !== "ready" || !this.client || this.era === "modern") return;
    void this.client.sendRootsListChanged().catch(() => {});
  }

  /** Start (or restart) the server and list its tools; rejects with a ToolError SERVER_UNAVAILABLE. */
  connect(): Promise<void> {
    this.connecting ??= this.doConnect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private makeTransport(): Transport {
    const c = this.config;
    if (c.url) return httpTransport(this.id, c);
    const env = { ...stringEnv(this.deps.baseEnv), ...c.env };
    const configured = { command: c.command!, args: c.args };
    const snapshot = this.snapshotFailed ? undefined : snapshotLaunch(configured, env, c.cwd);
    this.fromSnapshot = snapshot !== undefined;
    const launch = snapshot ?? configured;
    return new ChildStdioTransport({
      command: launch.command,
      args: launch.args,
      env,
      cwd: c.cwd,
      spawn: this.deps.spawn,
      onStderr: (line) => this.deps.emit({ type: "log", server: this.id, level: "stderr", data: line }),
      onGarbage: (line) => this.deps.emit({ type: "garbage", server: this.id, line }),
    });
  }

  private async doConnect(): Promise<void> {
    if (this.everConnected || this.failures > 0) this.restarts++;
    const generation = ++this.generation;
    this.setState("connecting");
    const transport = this.makeTransport();
    const client = new Client(
      { name: "pda", version: "0.1.0" },
      {
        capabilities: { elicitation: { form: {} }, roots: { listChanged: true }, sampling: {} },
        versionNegotiation: {
          mode: negotiation(this.config),
          probe: { timeoutMs: this.config.connect_timeout_ms },
        },
      },
    );
    client.setRequestHandler("roots/list", () => ({ roots: this.roots() }));
    client.setNotificationHandler("notifications/message", (n) => {
      this.deps.emit({
        type: "log",
        server: this.id,
        level: n.params.level,
        logger: n.params.logger,
        data: n.params.data,
      });
    });
    client.setNotificationHandler("notifications/tools/list_changed", () => {
      if (generation === this.generation) void this.refreshTools(client).catch(() => {});
    });
    // In the modern era a server's questions come back as `input_required` results; the SDK answers them
    // through these same handlers and retries the call, so they reach the same person or model.
    client.setRequestHandler("elicitation/create", async (request) => {
      const { reason, ...result } = await this.deps.elicit()(this.id, request.params);
      this.deps.emit({
        type: "elicitation",
        server: this.id,
        message: request.params.message,
        action: result.action,
        ...(reason && { reason }),
      });
      return reason ? { ...result, _meta: { ...result._meta, "pda/reason": reason } } : result;
    });
    client.setRequestHandler("sampling/createMessage", (request, ctx) =>
      this.sample(request, ctx.mcpReq.signal),
    );
    client.onclose = () => {
      // Failures while connecting are handled by doConnect's catch, not here.
      if (generation !== this.generation || this.closing || this.client !== client) return;
      this.onLost(transport);
    };

    const timeoutMs = this.config.connect_timeout_ms;
    // A start slowed by a busy machine is not a dead server: the wait stretches while the process works.
    const maxMs = Math.max(timeoutMs * START_CAP_FACTOR, START_CAP_MIN_MS);
    const wait = startWait({
      pid: () => (transport instanceof ChildStdioTransport ? transport.pid : undefined),
      timeoutMs,
      maxCpuMs: timeoutMs,
      maxMs,
    });
    try {
      const options = { signal: wait.signal, timeout: maxMs + 1_000 };
      await client.connect(transport, { ...options, ...this.prior() });
      wait.answered(); // idle now may mean waiting for our tools/list, not dead
      this.era = client.getProtocolEra();
      this.protocolVersion = client.getNegotiatedProtocolVersion();
      // A restart of this server (after a crash) need not probe again.
      this.known = { era: this.era, discover: client.getDiscoverResult() };
      await this.refreshTools(client, options);
      // Not under the start's signal: the stream outlives the start (aborting it would end the stream).
      if (this.era === "modern") await this.listen(client, generation, options.timeout);
    } catch (e) {
      if (
        this.fromSnapshot &&
        transport instanceof ChildStdioTransport &&
        transport.hasExited &&
        !this.closing
      ) {
        // A blob that does not fit after all (V8 refuses it with exit code 14): start from the bundle, at once.
        this.snapshotFailed = true;
        this.deps.emit({
          type: "log",
          server: this.id,
          level: "warning",
          data: `its start-up snapshot failed (the process ${transport.describeExit()}); starting it without`,
        });
        this.generation++;
        this.track(closeQuietly(client, transport));
        wait.dispose();
        return this.doConnect();
      }
      // The SDK turns the wait's abort reason into a string; its own message says more.
      const gaveUp = wait.signal.reason;
      const why = gaveUp instanceof StartTimeout ? gaveUp.message : this.describeFailure(transport, e);
      this.generation++; // the dying transport's onclose must not report a second failure
      this.known = undefined; // a cached era that no longer holds: the next start negotiates afresh
      // Not awaited: a server that would not start should not delay the others; close() waits for it.
      this.track(closeQuietly(client, transport));
      this.failures++;
      this.retryAt = this.deps.clock.now() + restartDelayMs(this.failures + 1);
      this.setState(this.closing ? "closed" : "failed", `could not start: ${why}`);
      throw new ToolError("SERVER_UNAVAILABLE", this.id, `server "${this.id}" is unavailable: ${why}`, {
        cause: e,
      });
    } finally {
      wait.dispose();
    }
    if (this.closing) {
      await closeQuietly(client, transport);
      throw new ToolError("SERVER_UNAVAILABLE", this.id, `server "${this.id}" is closed`);
    }
    this.client = client;
    this.transport = transport;
    this.everConnected = true;
    this.setState("ready");
  }

  /** A cached verdict for `auto`: no probe (pinned or 2025 connects need none). */
  private prior(): Pick<ConnectOptions, "prior"> {
    const known = this.known;
    if (!known?.era || negotiation(this.config) !== "auto") return {};
    if (known.era === "legacy") return { prior: { kind: "legacy" } };
    return known.discover ? { prior: { kind: "modern", discover: known.discover as DiscoverResult } } : {};
  }

  /**
   * A modern server sends list changes only on a subscriptions/listen stream: one is opened for its tools
   * (its notifications reach the handler set in doConnect). client.close() ends it.
   */
  private async listen(client: Client, generation: number, timeout: number): Promise<void> {
    if (!client.getServerCapabilities()?.tools?.listChanged) return;
    const subscription = await client.listen({ toolsListChanged: true }, { timeout });
    void subscription.closed.then((how) => {
      // The stream dropped while the session lives: listen again (a lost session reconnects anyway).
      if (how === "remote" && generation === this.generation && this.client === client && !this.closing)
        void this.listen(client, generation, timeout).catch(() => {});
    });
  }

  private async sample(request: CreateMessageRequest, signal: AbortSignal): Promise<CreateMessageResult> {
    const policy = this.config.sampling;
    try {
      if (policy === "deny")
        throw new ProtocolError(
          SAMPLING_REJECTED,
          `sampling is denied for server "${this.id}" in the hub config`,
        );
      const result = await this.deps.sample()(this.id, request.params, { policy, signal });
      this.deps.emit({ type: "sampling", server: this.id, ok: true, model: result.model });
      return result;
    } catch (e) {
      this.deps.emit({ type: "sampling", server: this.id, ok: false, reason: errorMessage(e) });
      throw e;
    }
  }

  private track(shutdown: Promise<void>): void {
    this.shutdowns.add(shutdown);
    void shutdown.finally(() => this.shutdowns.delete(shutdown));
  }

  private describeFailure(transport: Transport, e: unknown): string {
    const msg = errorMessage(e).replace(/^MCP error -?\d+: /, "");
    if (/spawn .*ENOENT/.test(msg)) {
      const cwd = this.config.cwd;
      if (cwd && !existsSync(cwd)) return `the working folder ${cwd} does not exist`;
      return `cannot run "${this.config.command}": command not found`;
    }
    if (/timed out/i.test(msg)) return `no answer to initialize within ${this.config.connect_timeout_ms} ms`;
    if (!(transport instanceof ChildStdioTransport) || !transport.hasExited) return msg;
    // "Connection closed" says nothing the exit code and stderr do not say better.
    return /Connection closed/i.test(msg)
      ? `the process ${transport.describeExit()}`
      : `${msg} (the process ${transport.describeExit()})`;
  }

  private onLost(transport: Transport, reason?: string): void {
    const why =
      transport instanceof ChildStdioTransport
        ? `the process ${transport.describeExit()}`
        : (reason ?? "the connection closed");
    // Reap the rest of the process group (grandchildren) of the dead session.
    this.track(closeQuietly(this.client, transport));
    this.client = undefined;
    this.transport = undefined;
    // this.tools stays: the last known tools keep names resolving to this server while it is down
    this.failures++;
    this.retryAt = this.deps.clock.now() + restartDelayMs(this.failures);
    this.setState("crashed", why);
  }

  private async refreshTools(
    client: Client,
    options: { timeout: number; signal?: AbortSignal } = { timeout: this.config.connect_timeout_ms },
  ): Promise<void> {
    // Every page, and kept by the SDK for checking structured results against each tool's output schema.
    const { tools } = await client.listTools(undefined, { ...options, cacheMode: "refresh" });
    const info = client.getServerVersion();
    const era = client.getProtocolEra();
    const discover = client.getDiscoverResult();
    this.deps.onList?.({
      ...(era !== undefined && { era }),
      ...(discover !== undefined && { discover }),
      ...(info?.name !== undefined && { server_name: info.name }),
      ...(info?.version !== undefined && { server_version: info.version }),
      tools,
    });
    this.setTools(tools);
  }

  private setTools(tools: Tool[]): void {
    const allow = this.config.allow ? new Set(this.config.allow) : undefined;
    const deny = new Set(this.config.deny);
    this.tools = tools.filter((t) => (!allow || allow.has(t.name)) && !deny.has(t.name));
    this.deps.emit({ type: "tools_changed", server: this.id, count: this.tools.length });
    this.deps.onTools();
  }

  /** Know the tools from the cache without starting the server: it starts at the first call (ready()). */
  useCached(list: CachedToolList): void {
    this.known = { era: list.era, discover: list.discover };
    this.era = list.era;
    this.setTools(list.tools as Tool[]);
    this.setState("cached");
  }

  /** The live client, restarting the server first when it crashed and its backoff has passed. */
  async ready(tool: string): Promise<Client> {
    if (this.probing) await this.probing;
    if (this.client && this.state === "ready") return this.client;
    if (this.state === "disabled") {
      throw new ToolError("SERVER_UNAVAILABLE", tool, `server "${this.id}" is disabled in the config`);
    }
    if (this.closing || this.state === "closed") {
      throw new ToolError("SERVER_UNAVAILABLE", tool, `server "${this.id}" is closed`);
    }
    if (!this.connecting) {
      const wait = this.retryAt - this.deps.clock.now();
      if (wait > 0) {
        throw new ToolError(
          "SERVER_UNAVAILABLE",
          tool,
          `server "${this.id}" is down (${this.lastError ?? "unknown error"}); next restart allowed in ${Math.ceil(wait)} ms`,
        );
      }
    }
    try {
      await this.connect();
    } catch (e) {
      if (e instanceof ToolError) throw new ToolError(e.code, tool, e.message, { cause: e.cause });
      throw e;
    }
    return this.client!;
  }

  /**
   * One tools/call, with the size of its answer. Never retried here: a call in flight when the server died
   * fails with SERVER_CRASHED.
   */
  async call(
    tool: string,
    args: Record<string, unknown>,
    options: { signal?: AbortSignal; timeoutMs: number; qualified: string },
  ): Promise<{ result: CallToolResult; bytes: number }> {
    // The common case without an extra await: a live session and no liveness probe running.
    const client =
      this.client && this.state === "ready" && !this.probing
        ? this.client
        : await this.ready(options.qualified);
    const transport = this.transport;
    const stdio = transport instanceof ChildStdioTransport ? transport : undefined;
    const signal = options.signal;
    // The SDK gets a signal of the call's own: the caller's may be shared by many calls (cancel.ts).
    const own = signal ? new AbortController() : undefined;
    let unwatch: (() => void) | undefined;
    try {
      signal?.throwIfAborted();
      // Progress costs a token in the request and a handler per call: ask for it only if someone shows it.
      const onprogress = this.deps.listening()
        ? (p: { progress: number; total?: number; message?: string }) =>
            this.deps.emit({
              type: "progress",
              server: this.id,
              tool,
              progress: p.progress,
              total: p.total,
              message: p.message,
            })
        : undefined;
      if (signal) unwatch = cancels.watch(signal, (reason) => own!.abort(reason));
      const result = (await client.callTool(
        { name: tool, arguments: args, ...(this.era === "modern" && { _meta: MODERN_CALL_META }) },
        { signal: own?.signal, timeout: options.timeoutMs, onprogress },
      )) as CallToolResult;
      this.failures = 0;
      // The stdio transport saw the answer's line, so the result need not be serialised again to size it.
      const id = stdio?.takeCallId(args);
      const bytes = (id !== undefined ? stdio!.takeBytes(id) : undefined) ?? resultBytes(result);
      return { result, bytes };
    } catch (e) {
      const id = stdio?.takeCallId(args);
      if (id !== undefined) stdio!.takeBytes(id);
      const error = mapCallError(e, options.qualified, this.id, options.timeoutMs, options.signal, () =>
        stdio?.describeExit(),
      );
      if ((error.code === "TOOL_TIMEOUT" || error.code === "TOOL_CANCELLED") && !this.probing) {
        this.probing = this.probe(client, transport).finally(() => (this.probing = undefined));
      }
      if (error.serverLost && this.state === "ready" && this.transport === transport) {
        // The SDK saw the close (or an HTTP endpoint stopped answering) before any transport event did:
        // drop the session now so the next call reconnects.
        this.generation++;
        this.onLost(transport!, error.message);
      }
      throw error;
    } finally {
      unwatch?.();
    }
  }

  /**
   * After a timeout, check the server still answers. One that does not (a busy loop, a deadlock) is killed
   * so the next call restarts it instead of timing out again.
   */
  private async probe(client: Client, transport: Transport | undefined): Promise<void> {
    try {
      // The 2026-07-28 era has no ping; discover is its cheapest request.
      if (client.getProtocolEra() === "modern") await client.discover({ timeout: PROBE_MS });
      else await client.ping({ timeout: PROBE_MS });
    } catch {
      if (this.client !== client || this.closing) return;
      this.generation++;
      this.client = undefined;
      this.transport = undefined;
      this.failures++;
      this.retryAt = this.deps.clock.now() + restartDelayMs(this.failures);
      this.setState("crashed", `did not answer a ping within ${PROBE_MS} ms after a timeout; killed`);
      if (transport instanceof ChildStdioTransport) await transport.kill();
      await closeQuietly(client, transport);
    }
  }

  /** A request other than tools/call (resources), on the live client. */
  async request<T>(what: string, fn: (client: Client) => Promise<T>): Promise<T> {
    const client = await this.ready(`${this.id}.${what}`);
    return fn(client);
  }

  async close(): Promise<void> {
    this.closing = true;
    this.generation++;
    await this.connecting?.catch(() => {});
    const { client, transport } = this;
    this.client = undefined;
    this.transport = undefined;
    if (this.state !== "disabled") this.setState("closed");
    await Promise.all([closeQuietly(client, transport), ...this.shutdowns]);
  }
}

async function closeQuietly(client?: Client, transport?: Transport): Promise<void> {
  try {
    await client?.close();
  } catch {
    // closing a broken session may fail; the transport close below still runs
  }
  try {
    await transport?.close();
  } catch {
    // already closed
  }
}

function stringEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}
