import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_RETRY, createProvider, type ModelProvider } from "../../llm/index.js";
import { ModelError, PerceptionSnapshot } from "../../core/index.js";
import { FakeClock, samplePerception, startFakeGemini, type FakeGemini } from "../../testing/index.js";
import { AdaptiveLimiter, LimitedProvider, QueryDeadline } from "../index.js";

const tick = () => new Promise((r) => setImmediate(r));

describe("AdaptiveLimiter", () => {
  it("caps calls in flight and hands slots over in order", async () => {
    const l = new AdaptiveLimiter({ maxConcurrent: 2, clock: new FakeClock() });
    const r1 = await l.acquire();
    const r2 = await l.acquire();
    const order: number[] = [];
    const p3 = l.acquire().then((r) => (order.push(3), r));
    const p4 = l.acquire().then((r) => (order.push(4), r));
    await tick();
    expect(order).toEqual([]);
    expect(l.snapshot()).toMatchObject({ in_flight: 2, waiting: 2 });
    r1();
    r1(); // releasing twice frees one slot only
    await tick();
    expect(order).toEqual([3]);
    r2();
    await tick();
    expect(order).toEqual([3, 4]);
    (await p3)();
    (await p4)();
    expect(l.snapshot()).toMatchObject({ in_flight: 0, waiting: 0 });
  });

  it("on a 429 pauses everyone for the server's delay and halves the cap once per pause", async () => {
    const clock = new FakeClock();
    const l = new AdaptiveLimiter({ maxConcurrent: 8, clock });
    expect(l.rateLimited(1000)).toEqual({ delayMs: 1000, limit: 4 });
    // A second 429 from a call already in flight: the pause is extended, the cap is not halved again.
    clock.advance(100);
    expect(l.rateLimited(1500)).toEqual({ delayMs: 1500, limit: 4 });
    const t0 = clock.now();
    const release = await l.acquire();
    expect(clock.now() - t0).toBe(1500);
    expect(clock.sleeps).toContain(1500);
    release();
    expect(l.snapshot()).toMatchObject({ rate_limited: 2, pause_ms: 1600, limit: 4, min_limit: 4 });
    // After the pause, a new 429 halves again.
    expect(l.rateLimited(undefined)).toEqual({ delayMs: 4000, limit: 2 }); // third in a row: 1000 · 2²
  });

  it("grows the cap back by about one per round of successes", () => {
    const clock = new FakeClock();
    const l = new AdaptiveLimiter({ maxConcurrent: 8, clock });
    l.rateLimited(0); // no pause: each such 429 is its own signal
    l.rateLimited(0);
    expect(l.snapshot().limit).toBe(2);
    l.succeeded();
    l.succeeded();
    expect(l.snapshot().limit).toBe(3);
    for (let i = 0; i < 100; i++) l.succeeded();
    expect(l.snapshot().limit).toBe(8);
  });

  it("a waiter whose signal aborts leaves the queue", async () => {
    const l = new AdaptiveLimiter({ maxConcurrent: 1, clock: new FakeClock() });
    const r1 = await l.acquire();
    const ac = new AbortController();
    const p = l.acquire(ac.signal);
    ac.abort(new Error("stop"));
    await expect(p).rejects.toThrow("stop");
    expect(l.snapshot().waiting).toBe(0);
    r1();
    (await l.acquire())();
  });
});

describe("LimitedProvider against the fake Gemini server", () => {
  let gemini: FakeGemini | undefined;
  afterEach(async () => gemini?.close());

  const request = () => ({
    role: "perception",
    system: "s",
    prompt: "p",
    schema: PerceptionSnapshot,
    schemaName: "PerceptionSnapshot",
  });
  const provider = (url: string): ModelProvider =>
    createProvider("gemini", { apiKey: "k", baseUrl: url, retry: { ...DEFAULT_RETRY, max_retries: 0 } });

  it("a 429 holds back every caller until the server's retry delay has passed, then all succeed", async () => {
    const arrivals: number[] = [];
    gemini = await startFakeGemini({
      handler: (req) => {
        arrivals.push(Date.now());
        return req.n === 1 ? { status: 429, retryDelay: "1s" } : { json: samplePerception() };
      },
    });
    const limiter = new AdaptiveLimiter({ maxConcurrent: 4 });
    const limited: number[] = [];
    const m = new LimitedProvider(provider(gemini.url), limiter, {
      onRateLimited: (i) => limited.push(i.delayMs),
    });
    const first = m.generate(request());
    // Once the first call has seen its 429, start three more: none may reach the server during the pause.
    while (limiter.snapshot().rate_limited === 0) await new Promise((r) => setTimeout(r, 10));
    const others = [m.generate(request()), m.generate(request()), m.generate(request())];
    const results = await Promise.all([first, ...others]);
    expect(results.map((r) => r.value.confidence)).toEqual([0.9, 0.9, 0.9, 0.9]);
    expect(results[0]!.retries).toBe(1);
    expect(limited).toEqual([1000]);
    expect(arrivals).toHaveLength(5);
    for (const t of arrivals.slice(1)) expect(t - arrivals[0]!).toBeGreaterThanOrEqual(950);
    expect(limiter.snapshot()).toMatchObject({ rate_limited: 1, in_flight: 0 });
  });

  it("retries 503s with backoff for that call only, and gives up after its retries", async () => {
    gemini = await startFakeGemini({
      handler: (req) => (req.n <= 2 || req.n >= 4 ? { status: 503 } : { json: samplePerception() }),
    });
    const clock = new FakeClock();
    const limiter = new AdaptiveLimiter({ maxConcurrent: 2, clock });
    const retries: string[] = [];
    const m = new LimitedProvider(provider(gemini.url), limiter, {
      clock,
      random: () => 0.5,
      baseDelayMs: 100,
      maxTransientRetries: 2,
      onRetry: (i) => retries.push(`${i.code}#${i.attempt}`),
    });
    const ok = await m.generate(request());
    expect(ok.retries).toBe(2);
    expect(clock.sleeps).toEqual([75, 150]);
    expect(limiter.snapshot().rate_limited).toBe(0); // a 503 does not slow the others down
    const err = await m.generate(request()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).code).toBe("MODEL_HTTP");
    expect(retries).toEqual(["MODEL_HTTP#1", "MODEL_HTTP#2", "MODEL_HTTP#1", "MODEL_HTTP#2"]);
    expect(limiter.snapshot().in_flight).toBe(0);
  });

  it("gives up, and says so, when the server asks for a wait longer than a batch should sit out", async () => {
    gemini = await startFakeGemini({ handler: () => ({ status: 429, retryDelay: "86400s" }) });
    const gaveUp: ModelError[] = [];
    const m = new LimitedProvider(provider(gemini.url), new AdaptiveLimiter({ maxConcurrent: 1 }), {
      onRateLimitGiveUp: (e) => gaveUp.push(e),
    });
    await expect(m.generate(request())).rejects.toThrow(/asks to wait 86400 s/);
    expect(gaveUp.map((e) => e.code)).toEqual(["MODEL_RATE_LIMITED"]);
  });
});

describe("QueryDeadline", () => {
  it("does not count time spent paused, and aborts when the rest is used up", async () => {
    const d = new QueryDeadline(150);
    d.pause();
    await new Promise((r) => setTimeout(r, 250));
    expect(d.signal.aborted).toBe(false);
    d.resume();
    await new Promise((r) => setTimeout(r, 400));
    expect(d.signal.aborted).toBe(true);
    expect(d.timedOut).toBe(true);
    d.dispose();
  });

  it("once disposed, a pause and resume (a judge call after the query) start no timer", async () => {
    const d = new QueryDeadline(50);
    d.dispose();
    d.pause();
    d.resume();
    await new Promise((r) => setTimeout(r, 120));
    expect(d.signal.aborted).toBe(false);
  });

  it("follows its parent signal without calling it a timeout", () => {
    const parent = new AbortController();
    const d = new QueryDeadline(10_000, parent.signal);
    parent.abort(new Error("ctrl-c"));
    expect(d.signal.aborted).toBe(true);
    expect(d.timedOut).toBe(false);
    d.dispose();
  });
});
