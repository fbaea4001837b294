/**
 * The durable-step log's read side and its one write that is not a finished call: the intent, logged before a
 * call leaves for its server, so a process that dies with the call in flight leaves it marked "sent". The
 * finished call is the SessionRecorder's recordToolCall (with `seq`), which completes the same row.
 */
import type { AgentSession, ToolCallState } from "./schemas.js";

export interface ToolIntent {
  seq: number;
  server: string;
  tool: string;
  args_sha: string;
  args_json: string;
  started_at: string;
  /** The clock readings the code took before the call (CallOptions.clock), as a JSON array. */
  clock_json?: string;
}

/** One logged call of a step, as a resumed step sees it. */
export interface LoggedCall {
  seq: number;
  server: string;
  tool: string;
  args_sha: string | null;
  /** The arguments as the log keeps them (sorted keys, redacted): a replayed call sent as this text is the same. */
  args_json: string | null;
  /**
   * args_json is the arguments' text whole, as args_sha hashes it: the store's sanitizer neither redacted nor
   * cut it. Only then may a replayed call be matched on its text alone.
   */
  args_whole: boolean;
  state: ToolCallState;
  ok: boolean;
  error_kind: string | null;
  error_message: string | null;
  result_json: string | null;
  /**
   * result_json is the value's JSON whole, as the call returned it: the sanitizer neither redacted nor cut it.
   * Only such a result may be handed to the code again; a secret the store redacted would reach it as
   * "[REDACTED:…]" and send the code down another path (or into a live call) with a value it never had.
   */
  result_whole: boolean;
  /** The clock readings the code took before it made the call, as a JSON array (StepReplay.clock). */
  clock_json: string | null;
  /**
   * An older finished row holds this position (its result not kept whole; this one a person decided, or a run
   * made again): a replayed copy of this row must be written out whole, as the store's shorthand for a copy
   * (replayed_runs) stands for a position's first finished row.
   */
  later?: true;
}

export interface ToolJournal {
  /**
   * Survives the process on return (a SIGKILL or a crash): the store appends a line to the session's intent
   * file, in the page cache once write(2) returns; a power loss too only with the store's durability `full`.
   */
  intent(sessionId: string, stepIndex: number, intent: ToolIntent): void;
  /**
   * The calls a step made in its earlier runs, one per position: an outcome that can be handed back wins over
   * a result not kept whole, which wins over a call left in doubt (a later run made it again, or a person
   * decided it); replayed copies are not listed.
   */
  stepCalls(sessionId: string, stepIndex: number): LoggedCall[];
  /** Calls of the session still "sent" are in doubt: their process is gone (the caller made sure). */
  markInDoubt(sessionId: string): number;
  /** The step is over: the intents of its finished calls are not needed any more (open ones stay). */
  endStep?(sessionId: string, stepIndex: number): void;
  /**
   * A sub-agent session a step's earlier run started, by its id (agent/team derives it from the step and the
   * call's order), so a resumed step does not start that sub-agent again; undefined when there is none.
   */
  earlierSession?(sessionId: string): EarlierSession | undefined;
  /** Runs `body` as one write, so the rows it records commit together. */
  batch?<T>(body: () => T): T;
  /**
   * As batch, for a replayed step's calls: those that are their logged rows over again may wait for the
   * store's next write (they record a replay, nothing sent); anything else commits at once.
   */
  replayed?<T>(body: () => T): T;
}

/** A sub-agent session as a resumed step finds it (ToolJournal.earlierSession). */
export interface EarlierSession {
  session: AgentSession;
  /** Its process died while it ran: this process has claimed it, to resume it. */
  interrupted: boolean;
  /** It runs in another process that is alive (a `pda resume` of it): it cannot be taken over. */
  busy: boolean;
}
