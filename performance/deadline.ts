/**
 * A per-query timeout that stops counting while the query waits on the shared rate limiter: a query must
 * not time out because other queries (or the provider's quota) made it wait its turn.
 */
export class QueryDeadline {
  private readonly ctrl = new AbortController();
  private remaining: number;
  private since = 0;
  private timer: NodeJS.Timeout | undefined;
  private paused = 0;
  private disposed = false;
  private onParent?: () => void;
  timedOut = false;

  constructor(
    readonly timeoutMs: number,
    private readonly parent?: AbortSignal,
    private readonly now: () => number = Date.now,
  ) {
    this.remaining = timeoutMs;
    if (parent) {
      this.onParent = () => this.ctrl.abort(parent.reason);
      if (parent.aborted) this.onParent();
      else parent.addEventListener("abort", this.onParent, { once: true });
    }
    this.start();
  }

  /** Aborts when the time is up or the parent (Ctrl-C) aborts. */
  get signal(): AbortSignal {
    return this.ctrl.signal;
  }

  /** Stop the clock (nestable). */
  pause(): void {
    if (this.disposed || this.paused++ > 0 || this.ctrl.signal.aborted) return;
    clearTimeout(this.timer);
    this.remaining -= this.now() - this.since;
  }

  resume(): void {
    if (this.disposed || this.paused === 0 || --this.paused > 0 || this.ctrl.signal.aborted) return;
    this.start();
  }

  /** Stop for good: later pause/resume calls (e.g. from a judge call after the query) start no timer. */
  dispose(): void {
    this.disposed = true;
    clearTimeout(this.timer);
    if (this.parent && this.onParent) this.parent.removeEventListener("abort", this.onParent);
  }

  private start(): void {
    this.since = this.now();
    this.timer = setTimeout(
      () => {
        this.timedOut = true;
        this.ctrl.abort(new Error(`the query timed out after ${this.timeoutMs} ms`));
      },
      Math.max(0, this.remaining),
    );
  }
}
