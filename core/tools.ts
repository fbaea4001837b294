/**
 * The narrow view of the tool world that the sandbox, heuristics and the loop need. MultiMCP implements
 * ToolHost; tests may implement it in-process.
 */
import type { ToolCallRecord } from "./schemas.js";

export interface ToolInfo {
  /** The server's id from the config, e.g. "math". */
  server: string;
  /** The tool's own name on its server, e.g. "add". */
  name: string;
  /** Always-unique name: "server.tool". */
  qualified: string;
  /** True when `name` alone is unique across all servers (so it is callable by plain name). */
  unique: boolean;
  description: string;
  /** The tool's JSON Schema for its arguments (MCP inputSchema). */
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  needsApproval?: boolean;
  /**
   * Calling it twice does no more than calling it once (MCP readOnlyHint or idempotentHint, or the server's
   * config lists it under `idempotent`): a resumed step may make a call of it that was in doubt again.
   */
  safeToRepeat?: boolean;
}

export interface CallOptions {
  /**
   * Aborting it cancels the call if it is still under way. Callers may share one signal among many calls
   * (a sandbox step does), so a host must not leave a listener on it after a call ends.
   */
  signal?: AbortSignal;
  timeoutMs?: number;
  /** This call's record, as the host measured it (it also goes to onCall listeners). Hosts may skip it. */
  onRecord?: (record: ToolCallRecord) => void;
  /**
   * Called once, just before the call leaves for its server (after any approval), so a durable step can log
   * its intent first. Hosts that send nothing anywhere (a call refused before it) do not call it.
   */
  onSend?: () => void;
  /**
   * When the call started (ISO), as a host wrapping this one took it: a host that makes the call's record
   * uses it rather than reading the clock again.
   */
  startedAt?: string;
  /**
   * The call's place among the tool calls of its CODE step, in the order the code made them (the sandbox
   * counts them, invalid ones included). A durable step's log is keyed by it.
   */
  seq?: number;
  /**
   * The clock readings the step's code took since the previous call it sent (see StepReplay.clock): a durable
   * step logs them with this call, so a replay hands them back. Hosts without a log ignore it.
   */
  clock?: string;
}

/** A configured server that is down now (failed to start, or crashed), and what is lost with it. */
export interface DownServer {
  server: string;
  description: string;
  /** Why, e.g. "could not start: no answer to initialize within 20000 ms". */
  reason: string;
  /** Its tools as last known (cached or listed before it went down); may be empty. */
  tools: string[];
}

export interface ToolHost {
  /** Every callable tool. */
  tools(): ToolInfo[];
  /**
   * Call a tool by qualified ("server.tool") or unique plain name with named arguments.
   * Resolves to the tool's value (structuredContent, else JSON parsed from text, else text);
   * throws ToolError (core/errors) on any failure, isError results included.
   */
  call(name: string, args: Record<string, unknown>, options?: CallOptions): Promise<unknown>;
  /** Listener for every finished call, successful or not. Returns an unsubscribe function. */
  onCall(listener: (record: ToolCallRecord) => void): () => void;
  /**
   * Which servers are down, of how many enabled ones (hosts without servers may leave it out). The decision
   * prompt names the down ones; a session ends when every one is down.
   */
  availability?(): { down: DownServer[]; enabled: number };
  /**
   * A durable step run again: the outcomes its earlier run logged, for the sandbox to hand the code without a
   * round trip per call. Hosts without a log leave it out; undefined when there is nothing to replay.
   */
  replay?(): StepReplay | undefined;
}

/**
 * A logged outcome as the code sees it again: the value, or the ToolError it threw; with the logged call (its
 * qualified tool name and arguments as the log keeps them) when the sandbox may check the call it now makes
 * against it itself.
 */
export type ReplayOutcome = (
  | { ok: true; value: unknown }
  /** The value as the sandbox takes it (its tagged JSON), when the log's text is that already. */
  | { ok: true; text: string }
  | { ok: false; code: string; tool: string; message: string }
) & { logged?: { name: string; argsJson: string } };

/** A call the sandbox answered from the log: where the code made it, and what it asked for in this run. */
export interface ReplayedCall {
  seq: number;
  /** The qualified tool name and the arguments it would be sent; undefined when no tool takes the call now. */
  call?: { name: string; args: Record<string, unknown> };
  /**
   * The sandbox found the call's request the very text of the logged call (ReplayOutcome.logged): the same
   * tool and arguments, so there is nothing of it to decode or compare; `call` is left out.
   */
  asLogged?: true;
}

export interface StepReplay {
  /**
   * By call position from the first: the outcome to hand the code, or null where the call must reach the host
   * (nothing usable was logged there). Positions past the end reach the host too.
   */
  readonly outcomes: readonly (ReplayOutcome | null)[];
  /**
   * The code made these calls and was handed their logged outcomes: each is checked against the log (a call
   * that is not the logged one breaks the replay and fails the step, as REPLAY_MISMATCH) and logged as replayed,
   * all in one write.
   */
  confirm(calls: readonly ReplayedCall[], options?: CallOptions): void;
  /**
   * Every clock reading (Date.now(), new Date()) the step's code took before its logged calls, in the order it
   * took them: the sandbox hands them back in that order, so code that puts the time in a call's arguments
   * makes the logged call again. Numbers joined by ",", each run of one value as the value then -(repeats).
   */
  readonly clock: string;
}
