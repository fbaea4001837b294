/**
 * The CSV flusher: at most one run per interval, trailing, and an interval stretched to 20 × the last run's
 * own time, so rewriting files that grow with the run does not cost time growing with its square.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Flusher } from "../files.js";

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

/** A flusher on the fake timers' clock (from 0) whose every run takes `cost` ms of it. */
function flusher(intervalMs: number, cost: number) {
  vi.setSystemTime(0);
  const runs: number[] = [];
  const f = new Flusher(
    intervalMs,
    () => {
      runs.push(Date.now());
      vi.setSystemTime(Date.now() + cost);
    },
    () => Date.now(),
  );
  const advance = (ms: number) => vi.advanceTimersByTimeAsync(ms);
  return { f, runs, advance };
}

describe("Flusher", () => {
  it("runs at once, then a burst of requests gives one trailing run an interval later", async () => {
    const { f, runs, advance } = flusher(1000, 1);
    f.request();
    f.request();
    f.request();
    expect(runs).toEqual([0]);
    await advance(1200);
    expect(runs).toEqual([0, 1001]);
  });

  it("waits 20 × the last run's time when that is longer than the interval", async () => {
    const { f, runs, advance } = flusher(1000, 200);
    f.request(); // runs 0..200: the next is due 20 × 200 ms after its end
    await advance(1000);
    f.request();
    await advance(2000);
    expect(runs).toEqual([0]);
    await advance(1100);
    expect(runs).toEqual([0, 4200]);
  });

  it("an interval of 0 runs at every request, however long a run takes", () => {
    const { f, runs } = flusher(0, 200);
    f.request();
    f.request();
    expect(runs).toEqual([0, 200]);
  });
});
