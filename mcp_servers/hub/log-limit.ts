/**
 * Bounds on a server's log messages (notifications/message and stderr lines), which listeners store: per
 * server a rate (token bucket), a cap between two finished calls ("per call") and a cap for the hub's
 * lifetime ("per session"), and a size cap per message. What is dropped is counted, not kept; the count is
 * reported as one log entry of the hub's own (logger "pda") when a call on that server ends, and at close.
 */
import type { HubEvent } from "./events.js";

export interface LogLimits {
  /** Messages per second kept on average, and the burst allowed above it. */
  perSecond: number;
  burst: number;
  perCall: number;
  perSession: number;
  /** Longest message text kept (longer ones are cut, saying so). */
  maxChars: number;
}

export const DEFAULT_LOG_LIMITS: LogLimits = {
  perSecond: 50,
  burst: 200,
  perCall: 500,
  perSession: 5_000,
  maxChars: 8_192,
};

type LogEvent = Extract<HubEvent, { type: "log" }>;

interface ServerBudget {
  tokens: number;
  at: number;
  sinceCall: number;
  total: number;
  dropped: number;
}

export class LogLimiter {
  private readonly budgets = new Map<string, ServerBudget>();

  constructor(
    private readonly now: () => number,
    private readonly limits: LogLimits = DEFAULT_LOG_LIMITS,
  ) {}

  private budget(server: string): ServerBudget {
    let b = this.budgets.get(server);
    if (!b) {
      b = { tokens: this.limits.burst, at: this.now(), sinceCall: 0, total: 0, dropped: 0 };
      this.budgets.set(server, b);
    }
    return b;
  }

  /** The event to pass on (its text cut to maxChars), or undefined when it is dropped (and counted). */
  admit(e: LogEvent): LogEvent | undefined {
    const b = this.budget(e.server);
    const now = this.now();
    const { perSecond, burst, perCall, perSession } = this.limits;
    b.tokens = Math.min(burst, b.tokens + (Math.max(0, now - b.at) * perSecond) / 1000);
    b.at = now;
    if (b.tokens < 1 || b.sinceCall >= perCall || b.total >= perSession) {
      b.dropped++;
      return undefined;
    }
    b.tokens--;
    b.sinceCall++;
    b.total++;
    return this.cut(e);
  }

  private cut(e: LogEvent): LogEvent {
    const max = this.limits.maxChars;
    if (typeof e.data === "string") {
      return e.data.length <= max
        ? e
        : { ...e, data: `${e.data.slice(0, max)}… (${e.data.length} chars, cut)` };
    }
    const text = JSON.stringify(e.data) ?? "";
    return text.length <= max
      ? e
      : { ...e, data: `${text.slice(0, max)}… (${text.length} chars of JSON, cut)` };
  }

  /**
   * A call on `server` ended: the per-call count starts again, and the messages dropped since the last
   * report come back as one entry to pass on (undefined when none were).
   */
  callEnded(server: string): LogEvent | undefined {
    const b = this.budgets.get(server);
    if (!b) return undefined;
    b.sinceCall = 0;
    return this.report(server, b);
  }

  /** Reports of every server with messages dropped and not yet reported (at close). */
  flush(): LogEvent[] {
    return [...this.budgets].flatMap(([server, b]) => this.report(server, b) ?? []);
  }

  private report(server: string, b: ServerBudget): LogEvent | undefined {
    if (b.dropped === 0) return undefined;
    const data = `${b.dropped} more log message${b.dropped === 1 ? "" : "s"} from ${server} dropped (over the hub's log limits)`;
    b.dropped = 0;
    return { type: "log", server, level: "warning", logger: "pda", data };
  }
}
