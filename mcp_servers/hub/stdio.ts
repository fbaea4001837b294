/**
 * A stdio client transport that owns its child process: the pid, the exit code, the tail of stderr, and
 * a shutdown that ends stdin, then SIGTERMs, then SIGKILLs the child's process group and its descendants (so
 * wrappers such as `sh -c` or `npx`, and what they leave running, leave nothing behind). Non-JSON lines on
 * stdout are reported, not fatal: many servers print a banner there. Spawning is injected so tests and benches can count or fake it.
 */
import { spawn as nodeSpawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import {
  parseJSONRPCMessage,
  serializeMessage,
  type JSONRPCMessage,
  type JSONRPCResultResponse,
  type RequestId,
  type Transport,
} from "@modelcontextprotocol/client";
import { MAX_ANSWER_BYTES } from "./http-cap.js";
import { descendants, signalAll } from "./proctree.js";
import { watchServer } from "./watchdog.js";

export type SpawnFn = (command: string, args: string[], options: SpawnOptions) => ChildProcess;

export interface StdioParams {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  spawn?: SpawnFn;
  /** Each line the server writes to stderr. */
  onStderr?: (line: string) => void;
  /** Each stdout line that is not a JSON-RPC message. */
  onGarbage?: (line: string) => void;
}

const STDERR_TAIL_LINES = 20;
/** A single stdout line longer than this means the stream cannot be trusted (the SDK uses the same). */
const MAX_LINE_BYTES = MAX_ANSWER_BYTES;
const KILL_WAIT_MS = 1500;

/**
 * What to signal to end a server: its process group (it leads one: spawned detached), itself and its
 * descendants (which may have made groups of their own).
 */
function everything(pid: number): number[] {
  return [-pid, pid, ...descendants(pid)];
}

/** Every child a transport started and has not seen exit, so a dying host can still kill them. */
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const child of live) if (child.pid !== undefined) signalAll(everything(child.pid), "SIGKILL");
  });
}

export class ChildStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child?: ChildProcess;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private readonly stderrTail: string[] = [];
  private exited?: Promise<void>;
  private exitInfo?: { code: number | null; signal: NodeJS.Signals | null };
  private closing?: Promise<void>;
  /** tools/call ids sent and not yet taken back, with the size of their answer once it came. */
  private readonly answerBytes = new Map<RequestId, number | undefined>();
  /** tools/call ids by the request's arguments object, until the caller takes them (takeCallId). */
  private readonly callIds = new WeakMap<object, RequestId>();

  constructor(private readonly params: StdioParams) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /**
   * The child's stderr (read here, line by line). With `pid`, what tells the SDK this is a stdio transport: a
   * server that stays silent at (or closes on) the `auto` probe is then a 2025-era one, not an outage.
   */
  get stderr(): NodeJS.ReadableStream | null | undefined {
    return this.child?.stderr;
  }

  get hasExited(): boolean {
    return this.exitInfo !== undefined;
  }

  /** How the process ended ("exit code 1", "signal SIGKILL") and its last stderr lines, for error messages. */
  describeExit(): string {
    const how = !this.exitInfo
      ? "closed its stdio"
      : this.exitInfo.signal
        ? `was killed by ${this.exitInfo.signal}`
        : `exited with code ${this.exitInfo.code}`;
    const tail = this.stderrTail.slice(-3).join(" | ");
    return tail ? `${how}; stderr: ${tail}` : how;
  }

  async start(): Promise<void> {
    if (this.child) throw new Error("ChildStdioTransport already started");
    installExitHook();
    const spawn = this.params.spawn ?? nodeSpawn;
    const child = spawn(this.params.command, this.params.args, {
      env: this.params.env,
      cwd: this.params.cwd,
      stdio: ["pipe", "pipe", "pipe"],
      windowsHide: true,
      // A session and process group of its own (setsid), at a terminal or not. At a terminal, Ctrl-C goes to
      // the whole foreground process group: servers in it would die with every interrupt (and a simulator lose
      // its episode) while pda asks the person what to do. And the group is how everything a server started is
      // ended, also what left its process tree (a daemonising wrapper, a grandchild whose parent exited):
      // close(), the exit hook above and, when pda is SIGKILLed, the watchdog signal the whole group.
      detached: true,
    });
    this.child = child;
    live.add(child);
    let unwatch = () => {};
    let spawnFailed = () => {};
    this.exited = new Promise((resolve) => {
      // A child that never started has no exit to wait for.
      spawnFailed = resolve;
      child.once("exit", (code, signal) => {
        this.exitInfo = { code, signal };
        live.delete(child);
        unwatch();
        // Let the last stdout bytes arrive ('close'), but do not wait on a grandchild holding the pipe.
        let done = false;
        const finish = () => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          resolve();
          this.onclose?.();
        };
        const timer = setTimeout(finish, 100);
        child.once("close", finish);
      });
    });
    child.stdout!.on("data", (chunk: Buffer) => this.onData(chunk));
    child.stdout!.on("error", (e) => this.onerror?.(e));
    child.stdin!.on("error", (e) => this.onerror?.(e));
    let partial = "";
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (text: string) => {
      const lines = (partial + text).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) this.noteStderr(line);
    });
    child.stderr!.on("end", () => partial && this.noteStderr(partial));
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", () => {
        // Ended by the watchdog should pda die without running its exit hook (SIGKILL).
        if (child.pid !== undefined && !this.exitInfo) unwatch = watchServer(child.pid);
        resolve();
      });
      child.once("error", (e) => {
        live.delete(child);
        spawnFailed();
        reject(e);
      });
    });
    child.on("error", (e) => this.onerror?.(e));
  }

  private noteStderr(line: string): void {
    const trimmed = line.trimEnd();
    if (!trimmed) return;
    this.stderrTail.push(trimmed);
    if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail.shift();
    this.params.onStderr?.(trimmed);
  }

  private onData(chunk: Buffer): void {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      let line: string;
      let bytes: number;
      if (this.pending.length === 0) {
        // The usual case, a whole line in one chunk: decoded in place, not copied first.
        line = chunk.toString("utf8", start, nl);
        bytes = nl - start;
      } else {
        this.pending.push(chunk.subarray(start, nl));
        const whole = Buffer.concat(this.pending);
        line = whole.toString("utf8");
        bytes = whole.length;
        this.pending = [];
        this.pendingBytes = 0;
      }
      start = nl + 1;
      this.onLine(line.charCodeAt(line.length - 1) === 13 ? line.slice(0, -1) : line, bytes);
    }
    if (start < chunk.length) {
      this.pending.push(chunk.subarray(start));
      this.pendingBytes += chunk.length - start;
      if (this.pendingBytes > MAX_LINE_BYTES) {
        this.pending = [];
        this.pendingBytes = 0;
        this.onerror?.(new Error(`a stdout line exceeded ${MAX_LINE_BYTES} bytes; closing the server`));
        void this.kill();
      }
    }
  }

  private onLine(line: string, bytes: number): void {
    let message: JSONRPCMessage;
    try {
      const value: unknown = JSON.parse(line);
      // The common answer is recognised by hand (the SDK's Protocol checks every message against its schemas
      // again anyway); anything else goes through the schema, so JSON that is not JSON-RPC is still garbage.
      message = isPlainResult(value) ? value : parseJSONRPCMessage(value);
    } catch {
      if (!line.trim()) return;
      this.params.onGarbage?.(line.length > 200 ? `${line.slice(0, 200)}…` : line);
      return;
    }
    const answered = "id" in message && !("method" in message) ? message.id : undefined;
    if (answered !== undefined && this.answerBytes.has(answered)) this.answerBytes.set(answered, bytes);
    this.onmessage?.(message);
  }

  /**
   * The id of the last tools/call request whose arguments were this very object, once: the caller takes it
   * when its call is over (a modern-era call answered `input_required` is sent again under a new id). Matching
   * by identity means a call can never be given another call's id (undefined instead).
   */
  takeCallId(args: object): RequestId | undefined {
    const id = this.callIds.get(args);
    this.callIds.delete(args);
    return id;
  }

  /** Bytes of the answer line to tools/call `id` (undefined when none came); forgets the id. */
  takeBytes(id: RequestId): number | undefined {
    const bytes = this.answerBytes.get(id);
    this.answerBytes.delete(id);
    return bytes;
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || !stdin.writable) throw new Error("not connected: the server process has exited");
    if ("method" in message && message.method === "tools/call" && "id" in message) {
      const args = (message.params as { arguments?: unknown } | undefined)?.arguments;
      if (args !== null && typeof args === "object") {
        const earlier = this.callIds.get(args);
        if (earlier !== undefined) this.answerBytes.delete(earlier);
        this.callIds.set(args, message.id);
      }
      this.answerBytes.set(message.id, undefined);
    }
    if (!stdin.write(serializeMessage(message))) {
      await new Promise<void>((resolve) => stdin.once("drain", resolve));
    }
  }

  /** End stdin, then SIGTERM, then SIGKILL the process group, waiting between each. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const child = this.child;
    if (!child || child.pid === undefined) return;
    // Taken now: once the child exits, its children are re-parented and can no longer be found (its group
    // still holds those that did not leave it).
    const tree = everything(child.pid);
    const gone = () => this.exitInfo !== undefined;
    const wait = (ms: number) =>
      Promise.race([this.exited, new Promise<void>((r) => setTimeout(r, ms).unref())]);
    try {
      child.stdin?.end();
    } catch {
      // ignore: the pipe may already be broken
    }
    if (!gone()) await wait(KILL_WAIT_MS);
    if (!gone()) {
      signalAll(tree, "SIGTERM");
      await wait(KILL_WAIT_MS);
    }
    if (!gone()) {
      signalAll(tree, "SIGKILL");
      await wait(KILL_WAIT_MS);
    }
    // The leader may have exited politely while something it started still runs.
    signalAll(
      tree.filter((pid) => pid !== child.pid),
      "SIGKILL",
    );
    this.pending = [];
    this.answerBytes.clear();
  }

  /** Kill at once (a wedged server): no polite stdin end. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.closing ??= (async () => {
      if (child.pid !== undefined) signalAll(everything(child.pid), "SIGKILL");
      await Promise.race([this.exited, new Promise<void>((r) => setTimeout(r, KILL_WAIT_MS).unref())]);
    })();
    return this.closing;
  }
}

/**
 * A result response exactly as JSONRPCMessageSchema would return it (its three keys, a valid id, a result
 * object without `_meta`), checked by hand: the schema's union costs more than the JSON.parse before it.
 */
function isPlainResult(value: unknown): value is JSONRPCResultResponse {
  if (typeof value !== "object" || value === null) return false;
  const m = value as Record<string, unknown>;
  const { id, result } = m;
  return (
    Object.keys(m).length === 3 &&
    m.jsonrpc === "2.0" &&
    (typeof id === "string" || Number.isSafeInteger(id)) &&
    typeof result === "object" &&
    result !== null &&
    !Array.isArray(result) &&
    (result as { _meta?: unknown })._meta === undefined
  );
}
