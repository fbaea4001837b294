/** Every sandbox limit ends the step with its typed error, and the next step runs normally. */
import { describe, expect, it } from "vitest";
import { runCode } from "../index.js";
import { BASE_BYTES, MAX_IDLE_GROWN_BYTES, enginesCreated, idleEngines, trimIdle } from "../engine.js";
import { limits, testHost } from "./helpers.js";

async function expectHealthy(): Promise<void> {
  const r = await runCode("return add(20, 22)", testHost(), limits());
  expect(r).toMatchObject({ ok: true, value: 42 });
}

describe("limits", () => {
  it("timeout_ms: a loop before any await", async () => {
    const r = await runCode("while (true) {}", testHost(), limits({ timeout_ms: 200 }));
    expect(r.error?.code).toBe("SANDBOX_TIMEOUT");
    expect(r.error?.message).toContain("200 ms");
    await expectHealthy();
  });

  it("timeout_ms: a loop after an await, and one that catches the interruption", async () => {
    const after = await runCode("await add(1, 2);\nfor (;;) {}", testHost(), limits({ timeout_ms: 200 }));
    expect(after.error?.code).toBe("SANDBOX_TIMEOUT");
    expect(after.tool_calls).toHaveLength(1);
    const caught = await runCode(
      "try { for (;;) {} } catch (e) { return 'escaped the timeout' }",
      testHost(),
      limits({ timeout_ms: 200 }),
    );
    expect(caught.error?.code).toBe("SANDBOX_TIMEOUT");
  });

  it("timeout_ms: a tool call that takes too long is aborted", async () => {
    const r = await runCode("return data.slow(10000)", testHost(), limits({ timeout_ms: 200 }));
    expect(r.error?.code).toBe("SANDBOX_TIMEOUT");
    expect(r.tool_calls).toMatchObject([{ tool: "slow", ok: false, error_kind: "TOOL_CANCELLED" }]);
  });

  describe("timeout_ms while a person is asked (heldMs)", () => {
    // A host whose tool asks a person: the wait clock opens synchronously inside call(), as the approval gate's
    // does, and the answer comes after `answerMs` (never, when undefined).
    function askingHost(answerMs?: number) {
      let since: number | undefined;
      let done = 0;
      const inner = testHost();
      const host = {
        tools: () => inner.tools(),
        onCall: inner.onCall.bind(inner),
        call: async (name: string, args: Record<string, unknown>) => {
          since = Date.now();
          if (answerMs === undefined) await new Promise(() => {});
          await new Promise((r) => setTimeout(r, answerMs));
          done += Date.now() - since;
          since = undefined;
          return inner.call(name, args);
        },
      };
      const heldMs = () => done + (since === undefined ? 0 : Date.now() - since);
      return { host, heldMs };
    }

    it("code that computes while the question is open still times out on schedule", async () => {
      for (const answerMs of [undefined, 60_000]) {
        const { host, heldMs } = askingHost(answerMs);
        const r = await runCode(
          "const p = add(1, 2); await null; while (true) {}",
          host,
          limits({ timeout_ms: 300 }),
          { heldMs },
        );
        expect(r.error?.code).toBe("SANDBOX_TIMEOUT");
      }
    });

    it("a wait while the code is idle does not count, and computing after it does", async () => {
      const { host, heldMs } = askingHost(600);
      const waited = await runCode("return await add(1, 2)", host, limits({ timeout_ms: 300 }), { heldMs });
      expect(waited).toMatchObject({ ok: true, value: 3 });
      const spun = await runCode("await add(1, 2); while (true) {}", host, limits({ timeout_ms: 300 }), {
        heldMs,
      });
      expect(spun.error?.code).toBe("SANDBOX_TIMEOUT");
    });
  });

  it("the idle engine pool gives back the memory of heavy steps, and all of it once idle", async () => {
    const heavy = "const a = new Uint8Array(24 << 20); a[1] = 1; return a.length";
    const rs = await Promise.all(Array.from({ length: 8 }, () => runCode(heavy, testHost(), limits())));
    for (const r of rs) expect(r).toMatchObject({ ok: true, value: 24 << 20 });
    const pool = idleEngines();
    // At most the cap of grown bytes, plus the engine released last (always kept for the next step).
    expect(pool.bytes - pool.count * BASE_BYTES).toBeLessThanOrEqual(MAX_IDLE_GROWN_BYTES + (48 << 20));
    trimIdle(Date.now() + 1);
    expect(idleEngines().count).toBe(0);
    await expectHealthy();
  });

  it("memory_bytes: many small objects, large buffers and a single huge allocation", async () => {
    const small = await runCode("const a = [];\nwhile (true) a.push({ i: a.length })", testHost(), limits());
    expect(small.error).toMatchObject({ code: "SANDBOX_MEMORY" });
    const buffers = await runCode(
      "const a = [];\nwhile (true) a.push(new Uint8Array(1 << 20))",
      testHost(),
      limits(),
    );
    expect(buffers.error).toMatchObject({ code: "SANDBOX_MEMORY", line: 2 });
    const huge = await runCode("return new ArrayBuffer(2 ** 31 - 1).byteLength", testHost(), limits());
    expect(huge.error?.code).toBe("SANDBOX_MEMORY");
    // Under the limit is fine: 20 MB with a 32 MB limit.
    const fits = await runCode(
      "const a = [];\nfor (let i = 0; i < 20; i++) a.push(new Uint8Array(1 << 20));\nreturn a.length",
      testHost(),
      limits(),
    );
    expect(fits.value).toBe(20);
    await expectHealthy();
  });

  it("memory_bytes: a smaller limit stops sooner", async () => {
    const r = await runCode(
      "const a = [];\nfor (let i = 0; i < 20; i++) a.push(new Uint8Array(1 << 20));\nreturn a.length",
      testHost(),
      limits({ memory_bytes: 8 << 20 }),
    );
    expect(r.error?.code).toBe("SANDBOX_MEMORY");
  });

  it("stack_bytes: deep recursion, caught inside or not", async () => {
    const r = await runCode("function f(n) { return f(n + 1) + 1 }\nreturn f(0)", testHost(), limits());
    expect(r.error).toMatchObject({ code: "SANDBOX_STACK", line: 1 });
    const depth = (stack: number) =>
      runCode(
        "let d = 0;\nfunction f() { d++; f() }\ntry { f() } catch (e) { return [d, e.message] }",
        testHost(),
        limits({ stack_bytes: stack }),
      );
    const deep = await depth(1 << 20);
    const shallow = await depth(64 << 10);
    const [deepN] = deep.value as [number, string];
    const [shallowN, message] = shallow.value as [number, string];
    expect(message).toMatch(/stack overflow|call stack/i);
    expect(shallowN).toBeLessThan(deepN / 2);
    expect(deepN).toBeGreaterThan(500);
  });

  it("stack_bytes: native recursion in the engine (deeply nested data) ends the step and the engine is replaced", async () => {
    const before = enginesCreated();
    const r = await runCode(
      "let a = [];\nfor (let i = 0; i < 300000; i++) a = [a];\nreturn JSON.stringify(a).length",
      testHost(),
      limits(),
    );
    expect(r.error).toMatchObject({ code: "SANDBOX_STACK" });
    await expectHealthy();
    expect(enginesCreated()).toBeGreaterThan(before);
  });

  it("max_tool_calls: the call past the limit ends the step, even unawaited or caught", async () => {
    const r = await runCode(
      "for (let i = 0; i < 100; i++) await add(i, 1);\nreturn 'done'",
      testHost(),
      limits({ max_tool_calls: 5 }),
    );
    expect(r.error).toMatchObject({ code: "SANDBOX_TOOL_LIMIT", tool: "math.add" });
    expect(r.tool_calls).toHaveLength(5);
    const flood = await runCode(
      "try { while (true) add(1, 2) } catch (e) { return 'caught' }",
      testHost(),
      limits({ max_tool_calls: 5 }),
    );
    expect(flood.error?.code).toBe("SANDBOX_TOOL_LIMIT");
  });

  it("max_result_bytes: measured in UTF-8 bytes of the returned JSON", async () => {
    const big = await runCode("return 'x'.repeat(5000)", testHost(), limits({ max_result_bytes: 1000 }));
    expect(big.error?.code).toBe("SANDBOX_RESULT_TOO_LARGE");
    expect(big.error?.message).toContain("5002 bytes");
    // 600 characters of 3 bytes each: under the limit in characters, over it in bytes.
    const wide = await runCode("return '€'.repeat(600)", testHost(), limits({ max_result_bytes: 1000 }));
    expect(wide.error?.code).toBe("SANDBOX_RESULT_TOO_LARGE");
    const fits = await runCode("return 'x'.repeat(900)", testHost(), limits({ max_result_bytes: 1000 }));
    expect(fits.ok).toBe(true);
  });

  it("max_log_bytes: output is kept up to the limit, then the step ends", async () => {
    const live: string[] = [];
    const r = await runCode(
      "for (let i = 0; i < 1000; i++) console.log('line ' + i);\nreturn 'done'",
      testHost(),
      limits({ max_log_bytes: 100 }),
      { onLog: (l) => live.push(l) },
    );
    expect(r.error?.code).toBe("SANDBOX_LOG_TOO_LARGE");
    expect(r.logs.slice(0, 3)).toEqual(["line 0", "line 1", "line 2"]);
    expect(Buffer.byteLength(r.logs.join(""))).toBeLessThanOrEqual(100);
    expect(live).toEqual(r.logs);
    const one = await runCode("console.log('y'.repeat(1e6))", testHost(), limits({ max_log_bytes: 100 }));
    expect(one.error?.code).toBe("SANDBOX_LOG_TOO_LARGE");
    expect(one.logs).toEqual(["y".repeat(100)]);
  });

  it("a promise nothing can settle ends the step at once", async () => {
    const r = await runCode("await new Promise(() => {})", testHost(), limits());
    expect(r.error?.code).toBe("SANDBOX_RUNTIME");
    // Not SANDBOX_TIMEOUT: the step ended because nothing could settle, not because time ran out.
    expect(r.error?.message).toContain("nothing will settle");
  });
});
