/** What a loop is built from (LoopDeps) and asked to do (RunOptions): the types its moves share with it. */
import type { Namespaces, runCode } from "../../action/index.js";
import type { Profile } from "../../config/index.js";
import type {
  AgentSession,
  Clock,
  ModelProvider,
  SessionRecorder,
  ToolCallRecord,
  ToolHost,
  ToolJournal,
} from "../../core/index.js";
import type { HumanChannel } from "../../hil/index.js";
import type { MemoryHit } from "../../memory/index.js";
import type { LoopEvent } from "./events.js";
import type { LoopHooks } from "./hooks.js";
import type { SpendLedger } from "./spend.js";

/** What the loop asks of memory: rendered text for the prompts ("" when there is nothing). */
export interface MemoryService {
  recall(query: string): string;
  toolStats(): string;
  /** Per-tool call counts, for ranking tools by reliability. */
  toolStatRows?(): ReadonlyArray<{ server: string; tool: string; calls: number; ok: number }>;
  /** What CODE's `memory.search` returns: past sessions in this memory's scope. */
  search?(text: string, limit: number): MemoryHit[];
  /** This memory (same scope) showing `hits` past sessions, for an agent that sets memory_hits. */
  withHits?(hits: number): MemoryService;
}

export interface LoopDeps {
  models: { perception: ModelProvider; decision: ModelProvider };
  host: ToolHost;
  recorder: SessionRecorder;
  /**
   * The durable-step log (the store): CODE steps that run again replay their logged calls. Without it a step
   * run again makes its calls again.
   */
  journal?: ToolJournal;
  profile: Profile;
  /** The profile's name in profiles.yaml, kept on the sessions it starts (AgentSession.profile). */
  profileName?: string;
  memory?: MemoryService;
  clock?: Clock;
  newId?: () => string;
  /** The sandbox; injectable so benchmarks can measure the loop alone. */
  execute?: typeof runCode;
  /** Who answers questions (hil/). Without one, a NOP pauses the session and failures use budgets only. */
  human?: HumanChannel;
  /** Ctrl-C presses to turn into a question (with `human`): go on, pause or abort. */
  interrupts?: InterruptSource;
  onEvent?: (event: LoopEvent) => void;
  signal?: AbortSignal;
  /** Whether a local path exists, for the query guard (default: the file system). */
  exists?: (path: string) => boolean;
  /** An agent team's phases, CODE namespaces and stops (hooks.ts); absent for a plain session. */
  hooks?: LoopHooks;
  /** Host functions every CODE step gets beside the tools, e.g. `memory.search`, `resources.read`. */
  services?: Namespaces;
  /** Spending of the sessions being driven; a team's loops share one, so sub-agents spend their callers' budgets. */
  ledger?: SpendLedger;
}

export interface RunOptions {
  sessionId?: string;
  parentSessionId?: string;
  agent?: string;
  /**
   * Calls the caller made for this session before running it (`pda robot bench` resets the episode to learn the
   * instruction it puts in the query): logged as the session's first calls, in no step, so its log holds them.
   */
  priorCalls?: readonly ToolCallRecord[];
}

/** Where Ctrl-C presses come from, when a person can be asked what to do about them (the CLI's terminal). */
export interface InterruptSource {
  subscribe(listener: () => void): () => void;
}

/** What drives sessions: a plain AgentLoop, or an agent team's loop that follows handoffs. */
export interface SessionDriver {
  /** Runs one session to an end state and returns it. */
  run(query: string, options?: RunOptions): Promise<AgentSession>;
  /** Continues a paused session, or one left running by a process that died. */
  resume(session: AgentSession): Promise<AgentSession>;
}
