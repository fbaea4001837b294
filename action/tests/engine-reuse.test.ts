import { afterEach, describe, expect, it, vi } from "vitest";
import { runCode } from "../index.js";
import {
  BUSY_BEFORE_WAIT,
  MAX_SPARE_WAIT_MS,
  MAX_START_WAIT_MS,
  acquireEngine,
  enginesCreated,
  releaseEngine,
  spareWaitMs,
  trimIdle,
  type Engine,
} from "../engine.js";
import { limits, testHost } from "./helpers.js";

const MEMORY = 32 << 20;

async function acquireMany(n: number): Promise<Engine[]> {
  const out: Engine[] = [];
  for (let i = 0; i < n; i++) out.push(await acquireEngine(MEMORY));
  return out;
}

describe("engines when many are busy", () => {
  afterEach(() => trimIdle(Date.now() + 1));

  it("a step with no idle engine takes one given back meanwhile instead of starting a thread", async () => {
    trimIdle(Date.now() + 1);
    const held = await acquireMany(BUSY_BEFORE_WAIT);
    const before = enginesCreated();
    const next = acquireEngine(MEMORY);
    releaseEngine(held[0]!);
    expect(await next).toBe(held[0]);
    expect(enginesCreated()).toBe(before);
    for (const e of [held[0]!, ...held.slice(1)]) releaseEngine(e);
  });

  /**
   * BUSY_BEFORE_WAIT engines starting and one more step asking for one, with `advanceMs` of the waits' timers
   * passed at once: only the timers are faked, the threads start for real, as slowly as the machine makes them.
   */
  async function askWhileStarting(advanceMs: number) {
    trimIdle(Date.now() + 1);
    const before = enginesCreated();
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const starting = Array.from({ length: BUSY_BEFORE_WAIT }, () => acquireEngine(MEMORY));
      const next = acquireEngine(MEMORY);
      // Synchronously, so before any thread can have answered: the engines are still starting.
      vi.advanceTimersByTime(advanceMs);
      return { before, held: await Promise.all(starting), next };
    } finally {
      vi.useRealTimers();
    }
  }

  it("a step that finds the busy engines still starting waits for them, however long they take to start", async () => {
    // Far past the wait while the engines start: the waiting step's clock has not run.
    const { before, held, next } = await askWhileStarting(MAX_SPARE_WAIT_MS * 2);
    expect(enginesCreated()).toBe(before + BUSY_BEFORE_WAIT);
    releaseEngine(held[0]!);
    expect(await next).toBe(held[0]);
    expect(enginesCreated()).toBe(before + BUSY_BEFORE_WAIT);
    for (const e of held) releaseEngine(e);
  });

  it("a step waits for starting engines only so long: then it starts its own", async () => {
    // As if one of them never finished starting.
    const { before, held, next } = await askWhileStarting(MAX_START_WAIT_MS);
    const own = await next;
    expect(held).not.toContain(own);
    expect(enginesCreated()).toBe(before + BUSY_BEFORE_WAIT + 1);
    for (const e of [...held, own]) releaseEngine(e);
  });

  it("where steps hold their engines long, a step waits longer for one (twice the usual hold, bounded)", async () => {
    for (let i = 0; i < 3; i++) {
      const e = await acquireEngine(MEMORY);
      await new Promise((r) => setTimeout(r, 800));
      releaseEngine(e);
    }
    // At least half of 800 ms is the usual hold now, whatever came before: the wait is at least twice that.
    expect(spareWaitMs()).toBeGreaterThanOrEqual(780);
    expect(spareWaitMs()).toBeLessThanOrEqual(MAX_SPARE_WAIT_MS);
    for (let i = 0; i < 12; i++) releaseEngine(await acquireEngine(MEMORY));
    expect(spareWaitMs()).toBeLessThan(780);
  });

  it("one of another memory size is not taken: the step starts its own engine", async () => {
    trimIdle(Date.now() + 1);
    const held = await acquireMany(BUSY_BEFORE_WAIT);
    const before = enginesCreated();
    const next = acquireEngine(MEMORY * 2);
    releaseEngine(held[0]!);
    const got = await next;
    expect(got).not.toBe(held[0]);
    expect(got.maxPages).toBeGreaterThan(held[0]!.maxPages);
    expect(enginesCreated()).toBe(before + 1);
    for (const e of [got, ...held.slice(1)]) releaseEngine(e);
  });

  it("steps that spin hold up no other step: past the short wait it gets a thread of its own", async () => {
    const stop = new AbortController();
    const spinning = Array.from({ length: BUSY_BEFORE_WAIT }, () =>
      runCode("while (true) {}", testHost(), limits({ timeout_ms: 600_000 }), { signal: stop.signal }),
    );
    try {
      const r = await runCode("return await add(2, 3)", testHost(), limits({ timeout_ms: 600_000 }));
      expect(r).toMatchObject({ ok: true, value: 5 });
    } finally {
      stop.abort();
    }
    for (const s of await Promise.all(spinning)) expect(s.error?.code).toBe("SANDBOX_CANCELLED");
  });
});
