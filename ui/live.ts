/**
 * Live updates fed by the store: while a page listens, a timer asks SQLite whether another process has
 * committed (PRAGMA data_version: no table is read) and only then tells the listeners, which re-read what
 * they show. No listener, no timer.
 */
import type { SessionStore } from "../memory/index.js";

/** A session's writer can die without writing; every so many checks listeners look anyway (liveness). */
const FORCE_EVERY = 40;

export class ChangeFeed {
  private readonly listeners = new Set<() => void>();
  private timer: NodeJS.Timeout | undefined;
  private mark = -1;
  private ticks = 0;

  constructor(
    private readonly store: SessionStore,
    private readonly intervalMs = 250,
  ) {}

  /** Call `onChange` after each change the store sees; returns the unsubscribe function. */
  subscribe(onChange: () => void): () => void {
    this.listeners.add(onChange);
    if (!this.timer) {
      this.mark = this.store.changeMark();
      this.timer = setInterval(() => this.check(), this.intervalMs);
      this.timer.unref();
    }
    return () => {
      this.listeners.delete(onChange);
      if (this.listeners.size === 0) this.stop();
    };
  }

  /** Tell the listeners now: something they show changed outside the store (a replay ended). */
  notify(): void {
    for (const l of [...this.listeners]) l();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private check(): void {
    const mark = this.store.changeMark();
    if (mark === this.mark && ++this.ticks % FORCE_EVERY !== 0) return;
    this.mark = mark;
    this.notify();
  }
}
