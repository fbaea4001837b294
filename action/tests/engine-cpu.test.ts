import { describe, expect, it } from "vitest";
import { runCode, sandboxCpuMs } from "../index.js";
import { trimIdle } from "../engine.js";
import { limits, testHost as host } from "./helpers.js";

const SPIN = "let x = 0; for (let i = 0; i < 3e6; i++) x += i % 7; return x";

describe("sandboxCpuMs", () => {
  it("counts the CPU of the engine threads, which the process's own CPU includes", async () => {
    await runCode("return 1", host(), limits()); // a thread up, so the spin below is all step
    const cpu0 = process.cpuUsage();
    const before = sandboxCpuMs();
    const r = await runCode(SPIN, host(), limits({ timeout_ms: 60_000 }));
    expect(r.ok).toBe(true);
    const used = sandboxCpuMs() - before;
    const cpu = process.cpuUsage(cpu0);
    expect(used).toBeGreaterThan(0);
    // Thread CPU (ns from schedstat) against the process's (µs from getrusage): a little slack for rounding.
    expect(used).toBeLessThanOrEqual((cpu.user + cpu.system) / 1000 + 1);
  });

  it("keeps the CPU of engines whose threads were ended, and of engines broken by their step", async () => {
    const r = await runCode(SPIN, host(), limits({ timeout_ms: 60_000 }));
    expect(r.ok).toBe(true);
    const withIdle = sandboxCpuMs();
    trimIdle(Date.now() + 1); // terminates every idle engine's thread
    expect(sandboxCpuMs()).toBeGreaterThanOrEqual(withIdle);
    // A native stack overflow poisons the engine: its thread ends itself after the step.
    const deep = await runCode(
      "let a = [];\nfor (let i = 0; i < 300000; i++) a = [a];\nreturn JSON.stringify(a).length",
      host(),
      limits({ timeout_ms: 60_000 }),
    );
    expect(deep.error).toMatchObject({ code: "SANDBOX_STACK" });
    expect(sandboxCpuMs()).toBeGreaterThan(withIdle);
  });
});
