/**
 * Holes found from outside (#24): requests to the host forged from inside the sandbox, host lookups through
 * prototype chains, forged value tags, and host work on sandbox input that the interrupt cannot stop.
 */
import { describe, expect, it } from "vitest";
import { runCode, type Namespaces } from "../index.js";
import { closestNames } from "../errors.js";
import { limits, testHost } from "./helpers.js";

function probe(): { namespaces: Namespaces; taken: unknown[][] } {
  const taken: unknown[][] = [];
  return {
    taken,
    namespaces: {
      probe: {
        take: async (args) => {
          taken.push(args);
          return "taken";
        },
      },
    },
  };
}

describe("requests to the host cannot be forged", () => {
  it("an accessor on Array.prototype[0] does not reach the outgoing queue", async () => {
    const host = testHost();
    const { namespaces, taken } = probe();
    // The setter turns the prelude's write into an own property holding a namespace call of its own choosing:
    // Object.entries and the host Function constructor, reached through the namespaces' prototype chain.
    const r = await runCode(
      String.raw`
      const forged = ['1\x011\x01"constructor.entries"\x01[{"a":1}]', '2\x011\x01"constructor.constructor"\x01["return 1"]'];
      let n = 0;
      Object.defineProperty(Array.prototype, 0, {
        configurable: true,
        set(v) { Object.defineProperty(this, 0, { value: forged[n++ % 2], writable: true, enumerable: true, configurable: true }) },
      });
      const sum = await add(1, 2);
      return [sum, n];`,
      host,
      limits(),
      { namespaces },
    );
    expect(r.error).toBeUndefined();
    expect(r.value).toEqual([3, 0]);
    expect(r.tool_calls).toMatchObject([{ tool: "add", ok: true }]);
    expect(taken).toEqual([]);
  });

  it("namespace functions are own functions only: nothing inherited, nothing that is not a function", async () => {
    const fns = Object.assign(Object.create({ inherited: async () => "inherited" }) as object, {
      take: async () => "taken",
      notAFunction: 5,
    });
    const namespaces = { probe: fns } as unknown as Namespaces;
    const r = await runCode(
      `const out = [await probe.take()];
      for (const name of ["inherited", "notAFunction"]) {
        try { out.push(await probe[name]()) } catch (e) { out.push(e.name) }
      }
      return out`,
      testHost(),
      limits(),
      { namespaces },
    );
    expect(r.error).toBeUndefined();
    expect(r.value).toEqual(["taken", "TypeError", "TypeError"]);
  });

  it("namespace calls count against max_tool_calls", async () => {
    const { namespaces, taken } = probe();
    const r = await runCode(
      "for (let i = 0; i < 5; i++) await probe.take(i);\nreturn 'all five'",
      testHost(),
      limits({ max_tool_calls: 3 }),
      { namespaces },
    );
    expect(r.error?.code).toBe("SANDBOX_TOOL_LIMIT");
    expect(taken).toHaveLength(3);
  });

  it("a value tag forged by a getter is checked by the host's decoder", async () => {
    // plain() sees 1, JSON.stringify then sees the tag: it crosses unescaped.
    const forge = (tag: string) =>
      `(() => { let n = 0; return { get text() { return n++ ? ${tag} : "x" } } })()`;
    const host = testHost();
    const r = await runCode(
      `const out = [];
      for (const v of [${forge(`{ $pda: "bytes", base64: "AAAA", type: "constructor" }`)},
                       ${forge(`{ $pda: "bigint", value: "9".repeat(200000) }`)},
                       ${forge(`{ $pda: "nonsense" }`)}]) {
        try { out.push(await text.echo(v)) } catch (e) { out.push(e.code + ": " + e.message) }
      }
      return out`,
      host,
      limits(),
    );
    expect(r.error).toBeUndefined();
    const out = r.value as string[];
    expect(out).toHaveLength(3);
    for (const line of out) expect(line).toMatch(/^TOOL_INVALID_ARGS: text\.echo: a malformed value tag/);
    expect(host.received).toEqual([]);
  });
});

describe("host work on sandbox input is bounded", () => {
  it("a 4 MB property name or tool name gets no edit-distance search", async () => {
    // Without the length guard the closest known name would come back, however far.
    expect(closestNames("x".repeat(4 << 20), ["math.add", "text.echo"])).toEqual([]);
    const r = await runCode(
      `const k = "x".repeat(4 << 20);
      const out = [];
      try { math[k] } catch (e) { out.push(e.name) }
      try { await callTool(k) } catch (e) { out.push(e.code, e.message.length < 1000) }
      return out`,
      testHost(),
      // Generous: it takes ~0.2 s on an idle machine and several times that beside other work; the guard is
      // what keeps it from taking minutes.
      limits({ timeout_ms: 20_000, memory_bytes: 64 << 20 }),
    );
    expect(r.error).toBeUndefined();
    expect(r.value).toEqual(["TypeError", "TOOL_NOT_FOUND", true]);
  });

  it("arguments nested deeper than 128 levels are refused before the host walks them", async () => {
    const { namespaces, taken } = probe();
    const r = await runCode(
      `let v = 1;
      for (let i = 0; i < 200; i++) v = [v];
      try { await probe.take(v) } catch (e) { return e.code + ": " + e.message }`,
      testHost(),
      limits(),
      { namespaces },
    );
    expect(r.value).toBe("TOOL_INVALID_ARGS: probe.take: the arguments nest deeper than 128 levels");
    expect(taken).toEqual([]);
  });
});
