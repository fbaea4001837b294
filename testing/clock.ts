/**
 * A Clock whose sleeps return at once and move virtual time forward, recording each wait: tests assert on
 * the delays a component asked for (backoff, RetryInfo) without spending wall time.
 */
import type { Clock } from "../core/index.js";

export class FakeClock implements Clock {
  /** Every sleep requested, in ms, in order. */
  readonly sleeps: number[] = [];
  private t: number;

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  iso(): string {
    return new Date(this.t).toISOString();
  }

  /** Move virtual time forward without a sleep (e.g. to simulate work taking time). */
  advance(ms: number): void {
    this.t += ms;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    this.sleeps.push(ms);
    this.t += ms;
    return Promise.resolve();
  }
}
