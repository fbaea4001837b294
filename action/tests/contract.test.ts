/** The calling convention of DESIGN.md's "CODE steps", against the in-process tool host. */
import { describe, expect, it } from "vitest";
import { ExecutionResult, ToolError } from "../../core/index.js";
import { decodeValue, runCode } from "../index.js";
import { InProcessToolHost, mathTools } from "../testing.js";
import { limits, testHost } from "./helpers.js";

describe("tool functions", () => {
  it("are callable by plain name and as server.tool, with positional or named arguments", async () => {
    const host = testHost();
    const r = await runCode(
      "const m = await math.multiply(3, 2);\nconst s = await add({ a: 32, b: 5 });\nreturn subtract(s, m);",
      host,
      limits(),
    );
    expect(r.error).toBeUndefined();
    expect(r.value).toBe(31);
    expect(host.received.map((c) => c.args)).toEqual([
      { a: 3, b: 2 },
      { a: 32, b: 5 },
      { a: 37, b: 6 },
    ]);
  });

  it("send positional numbers and booleans exactly as JSON would", async () => {
    const host = testHost();
    const r = await runCode(
      "await add(1e21, -0); await add(0.1, 5e-324); await echo('x', 2, false); return add(NaN, 1)",
      host,
      limits(),
    );
    expect(host.received.map((c) => c.args)).toEqual([
      { a: 1e21, b: 0 },
      { a: 0.1, b: 5e-324 },
      { text: "x", times: 2, loud: false },
    ]);
    expect(r.error?.code).toBe("TOOL_INVALID_ARGS");
    expect(r.error?.message).toMatch(/argument "a" is NaN/);
  });

  it("fill schema defaults and leave undefined positions out", async () => {
    const host = testHost();
    const r = await runCode("return [await echo('hi'), await echo('yo', undefined, true)]", host, limits());
    expect(r.value).toEqual([
      { text: "hi", times: 1 },
      { text: "yo", times: 1, loud: true },
    ]);
  });

  it("take a single object as the value of a tool's only object parameter", async () => {
    const host = testHost();
    const r = await runCode(
      "return [await configure({ depth: 2 }), await configure({ options: { depth: 3 } })]",
      host,
      limits(),
    );
    expect(r.value).toEqual([{ options: { depth: 2 } }, { options: { depth: 3 } }]);
  });

  it("reject bad arguments with a TOOL_INVALID_ARGS that names the field and shows the signature", async () => {
    const host = testHost();
    const wrongType = await runCode("return add('1', 2)", host, limits());
    expect(wrongType.error).toMatchObject({ code: "TOOL_INVALID_ARGS", tool: "math.add" });
    expect(wrongType.error?.message).toContain('argument "a" must be number');
    // The signature as the prompt shows it: add is unique, so it is called by its plain name.
    expect(wrongType.error?.message).toContain("(signature: add(a: number, b: number))");

    const missing = await runCode("return add(1)", host, limits());
    expect(missing.error?.message).toContain('missing required argument "b"');

    const tooMany = await runCode("return add(1, 2, 3)", host, limits());
    expect(tooMany.error?.message).toContain("takes 2 arguments, got 3");

    const unknown = await runCode("return add({ a: 1, b: 2, c: 3 })", host, limits());
    expect(unknown.error?.message).toContain('unknown argument "c"');

    const nan = await runCode("return add(NaN, 1)", host, limits());
    expect(nan.error?.message).toContain('argument "a" is NaN');

    const bigint = await runCode("return add(2n ** 64n, 1)", host, limits());
    expect(bigint.error?.message).toContain("too large for a JSON number");

    // None of these reached the tool.
    expect(host.received).toEqual([]);
  });

  it("send Dates, safe bigints and bytes to tools as explicit JSON", async () => {
    const host = testHost();
    const r = await runCode(
      "return [await echo(new Date(Date.UTC(2024, 0, 2))), await add(40n, 2), await echo({ text: 'b', bin: new Uint8Array([1, 2, 3]) })]",
      host,
      limits(),
    );
    expect(r.error).toBeUndefined();
    expect(r.value).toEqual([
      { text: "2024-01-02T00:00:00.000Z", times: 1 },
      42,
      { text: "b", bin: "AQID", times: 1 },
    ]);
  });

  it("are bound only by server.tool when the plain name is ambiguous, and by an identifier alias", async () => {
    const host = testHost();
    const r = await runCode(
      "return [typeof format, await text.format(1), await other.format(2), await text['get-weather']('Oslo'), await get_weather({ city: 'Rome' }), await callTool('text.format', 3)]",
      host,
      limits(),
    );
    expect(r.error).toBeUndefined();
    expect(r.value).toEqual(["undefined", "text:1", "other:2", "sunny in Oslo", "sunny in Rome", "text:3"]);
    const ambiguous = await runCode("return callTool('format', 1)", host, limits());
    expect(ambiguous.error?.message).toContain("ambiguous; use one of: text.format, other.format");
  });

  it("throw a ToolError the code can catch, with tool, code and message", async () => {
    const host = testHost();
    const r = await runCode(
      "try { await divide(1, 0) } catch (e) { return [e instanceof ToolError, e instanceof Error, e.name, e.code, e.tool, e.message] }",
      host,
      limits(),
    );
    expect(r.value).toEqual([
      true,
      true,
      "ToolError",
      "TOOL_ERROR",
      "math.divide",
      "math.divide: division by zero",
    ]);
    const plain = await runCode(
      "try { await data.crash() } catch (e) { return [e.code, e.message] }",
      host,
      limits(),
    );
    expect(plain.value).toEqual(["TOOL_ERROR", "data.crash: disk on fire"]);
  });

  it("end the step with the ToolError's code when the code does not catch it", async () => {
    const r = await runCode("const x = await divide(1, 0);\nreturn x", testHost(), limits());
    expect(r.ok).toBe(false);
    expect(r.error).toEqual({
      code: "TOOL_ERROR",
      tool: "math.divide",
      message: "math.divide: division by zero",
    });
    expect(r.tool_calls).toMatchObject([
      { server: "math", tool: "divide", ok: false, error_kind: "TOOL_ERROR" },
    ]);
  });

  it("run concurrently under parallel()", async () => {
    // Each `meet` call answers only once both are in flight: run one after the other, they never would.
    let arrived = 0;
    const both: Array<() => void> = [];
    const host = new InProcessToolHost([
      ...mathTools(),
      {
        server: "data",
        name: "meet",
        description: "answers once two calls are waiting",
        inputSchema: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
        handler: ({ n }) =>
          new Promise((resolve) => {
            both.push(() => resolve(n));
            if (++arrived === 2) for (const go of both) go();
          }),
      },
    ]);
    const r = await runCode(
      "return await parallel([() => data.meet(1), () => data.meet(2), () => add(1, 2)])",
      host,
      limits({ timeout_ms: 60_000 }),
    );
    expect(r.value).toEqual([1, 2, 3]);
    expect(r.tool_calls).toHaveLength(3);
  });
});

describe("the step", () => {
  it("returns the value of a top-level return and awaits at top level", async () => {
    const r = await runCode(
      "const a = await add(1, 2);\nreturn { a, list: [a, a * 2] }",
      testHost(),
      limits(),
    );
    expect(r).toMatchObject({ ok: true, value: { a: 3, list: [3, 6] } });
    const none = await runCode("await add(1, 2)", testHost(), limits());
    expect(none.ok).toBe(true);
    expect("value" in none).toBe(false);
  });

  it("captures console output, live and in the result", async () => {
    const live: string[] = [];
    const r = await runCode(
      "console.log('sum', await add(1, 2), { x: [1, undefined, 2n], d: new Date(0) });\nconsole.warn('careful');\nconsole.error(new TypeError('bad'));\nreturn 1",
      testHost(),
      limits(),
      { onLog: (l) => live.push(l) },
    );
    expect(r.logs).toEqual([
      "sum 3 { x: [1, undefined, 2n], d: 1970-01-01T00:00:00.000Z }",
      "[warn] careful",
      "[error] TypeError: bad",
    ]);
    expect(live).toEqual(r.logs);
  });

  it("makes values JSON cannot carry explicit in its result, both ways across the boundary", async () => {
    const r = await runCode(
      "const rich = await data.rich();\nreturn { rich, types: [rich.when instanceof Date, typeof rich.big, rich.bytes instanceof Uint8Array, 'nothing' in rich, Number.isNaN(rich.nan), rich.$pda], mine: { u: undefined, inf: -Infinity, m: new Map([[1, 'a']]), s: new Set([1]), f: function named() {} } }",
      testHost(),
      limits(),
    );
    expect(r.error).toBeUndefined();
    const value = r.value as Record<string, any>;
    expect(value.types).toEqual([true, "bigint", true, true, true, "a literal key"]);
    expect(value.rich).toEqual({
      when: { $pda: "date", value: "2024-05-06T07:08:09.000Z" },
      big: { $pda: "bigint", value: "1180591620717411303424" },
      bytes: { $pda: "bytes", base64: "AAH+/w==" },
      nothing: { $pda: "undefined" },
      nan: { $pda: "number", value: "NaN" },
      $$pda: "a literal key",
    });
    expect(value.mine).toEqual({
      u: { $pda: "undefined" },
      inf: { $pda: "number", value: "-Infinity" },
      m: { $pda: "map", entries: [[1, "a"]] },
      s: { $pda: "set", values: [1] },
      f: { $pda: "function", name: "named" },
    });
    const back = decodeValue(value.rich) as Record<string, unknown>;
    expect(back.when).toEqual(new Date("2024-05-06T07:08:09.000Z"));
    expect(back.big).toBe(2n ** 70n);
    expect(back.bytes).toEqual(new Uint8Array([0, 1, 254, 255]));
    expect(back.$pda).toBe("a literal key");
  });

  it("encodes rich values and formats objects even after the code has replaced eval, JSON and typed arrays", async () => {
    // The codec's rarely used half is compiled on first use, after the code ran: it must not depend on
    // anything the code could have replaced by then.
    const r = await runCode(
      [
        "globalThis.eval = () => { throw new Error('eval replaced'); };",
        "globalThis.Float32Array = function () {}; globalThis.JSON = { stringify() { return 'x'; }, parse() {} };",
        "console.log({ a: [1, 2] }, new Map([[1, 'b']]));",
        "const rich = await data.rich();",
        "return { when: rich.when instanceof Date, nan: -Infinity };",
      ].join("\n"),
      testHost(),
      limits(),
    );
    expect(r.error).toBeUndefined();
    expect(r.logs).toEqual(['{ a: [1, 2] } Map(1) { 1 => "b" }']);
    expect(r.value).toEqual({ when: true, nan: { $pda: "number", value: "-Infinity" } });
  });
  it("reports a syntax error at the line and column of the model's own code", async () => {
    const r = await runCode("const a = 1;\nconst b = 2;\nconst c = a +* b;\nreturn c", testHost(), limits());
    expect(r.error).toMatchObject({ code: "SANDBOX_SYNTAX", line: 3, column: 14 });
    expect(r.error?.message).toMatch(/^SyntaxError: .*\(line 3, column 14\)$/);
    const first = await runCode("return )", testHost(), limits());
    expect(first.error).toMatchObject({ code: "SANDBOX_SYNTAX", line: 1 });
  });

  it("reports a runtime error with its line and column", async () => {
    const r = await runCode("const a = null;\n\nreturn a.b;", testHost(), limits());
    expect(r.error).toMatchObject({ code: "SANDBOX_RUNTIME", line: 3, column: 9 });
    expect(r.error?.message).toContain("TypeError");
  });

  it("lists the closest tool names for an unknown function", async () => {
    const r = await runCode("return await mutliply(2, 3)", testHost(), limits());
    expect(r.error?.code).toBe("SANDBOX_RUNTIME");
    expect(r.error?.message).toMatch(/mutliply.*is not defined; closest tools: math\.multiply/);
    const member = await runCode("return await math.ad(2, 3)", testHost(), limits());
    expect(member.error?.message).toContain("math.ad is not a function of math; closest: add, math.add");
  });

  it("records every tool call with server, tool, outcome, latency and size", async () => {
    const r = await runCode(
      "await add(1, 2);\ntry { await add('x', 1) } catch {}\ntry { await divide(1, 0) } catch {}\nreturn text.echo('abc')",
      testHost(),
      limits(),
    );
    expect(r.tool_calls.map((c) => [c.server, c.tool, c.ok, c.error_kind])).toEqual([
      ["math", "add", true, undefined],
      ["math", "add", false, "TOOL_INVALID_ARGS"],
      ["math", "divide", false, "TOOL_ERROR"],
      ["text", "echo", true, undefined],
    ]);
    expect(r.tool_calls[3]!.bytes).toBe(Buffer.byteLength('{"text":"abc","times":1}'));
    for (const c of r.tool_calls) expect(Number.isNaN(Date.parse(c.started_at))).toBe(false);
  });

  it("exposes namespace functions of the host, with values crossing like tool values", async () => {
    const seen: unknown[][] = [];
    const r = await runCode(
      "const hits = await memory.search('math', { limit: 2, since: new Date(0) });\nreturn hits",
      testHost(),
      limits(),
      {
        namespaces: {
          memory: {
            search: async (args) => {
              seen.push(args);
              return [{ id: "s1", at: new Date(5) }];
            },
          },
        },
      },
    );
    expect(r.error).toBeUndefined();
    expect(seen).toEqual([["math", { limit: 2, since: new Date(0) }]]);
    expect(r.value).toEqual([{ id: "s1", at: { $pda: "date", value: "1970-01-01T00:00:00.005Z" } }]);
    expect(r.tool_calls).toEqual([]);
  });

  it("waits for calls the code started without awaiting them", async () => {
    const host = testHost();
    const r = await runCode("data.slow(100);\nreturn 'early'", host, limits());
    expect(r.value).toBe("early");
    expect(r.tool_calls).toMatchObject([{ tool: "slow", ok: true }]);
  });

  it("is cancelled by its AbortSignal, aborting the tool calls in flight", async () => {
    const controller = new AbortController();
    // Aborted once the call is in flight and listening (not after a fixed sleep it may not have reached).
    const host = new InProcessToolHost([
      {
        server: "data",
        name: "slow",
        description: "never answers; fails when its call is aborted",
        inputSchema: { type: "object", properties: {} },
        handler: (_args, { signal }) =>
          new Promise((_resolve, reject) => {
            signal?.addEventListener("abort", () =>
              reject(new ToolError("TOOL_CANCELLED", "data.slow", "data.slow: cancelled")),
            );
            controller.abort();
          }),
      },
    ]);
    const r = await runCode("return await data.slow()", host, limits({ timeout_ms: 600_000 }), {
      signal: controller.signal,
    });
    expect(r.error?.code).toBe("SANDBOX_CANCELLED");
    expect(r.tool_calls).toMatchObject([{ tool: "slow", ok: false, error_kind: "TOOL_CANCELLED" }]);

    const before = await runCode("return 1", testHost(), limits(), { signal: AbortSignal.abort() });
    expect(before.error?.code).toBe("SANDBOX_CANCELLED");
  });

  it("starts from a fresh context every time: nothing leaks from one step to the next", async () => {
    const host = testHost();
    await runCode(
      "globalThis.secret = 42; Object.prototype.polluted = true; Array.prototype.push = null; add = () => 'hijacked'; console.log = null; return 1",
      host,
      limits(),
    );
    const r = await runCode(
      "const a = []; a.push(1); console.log('ok');\nreturn [typeof secret, ({}).polluted, await add(1, 2)]",
      host,
      limits(),
    );
    expect(r.value).toEqual(["undefined", { $pda: "undefined" }, 3]);
    expect(r.logs).toEqual(["ok"]);
  });

  it("returns results that match the ExecutionResult schema, ok or not", async () => {
    const host = testHost();
    for (const code of [
      "return add(1, 2)",
      "await divide(1, 0)",
      "return )",
      "console.log(1); return new Date(0)",
    ]) {
      const r = await runCode(code, host, limits());
      expect(() => ExecutionResult.parse(r)).not.toThrow();
      expect(JSON.parse(JSON.stringify(r))).toEqual(r);
    }
  });

  it("runs concurrent steps side by side without mixing their calls, logs or values", async () => {
    const host = testHost();
    const steps = [1, 2, 3].map((n) =>
      runCode(
        `console.log('step ${n}');\nawait data.slow(${50 * n});\nreturn add(${n}, ${n})`,
        host,
        limits(),
      ),
    );
    const results = await Promise.all(steps);
    expect(results.map((r) => r.value)).toEqual([2, 4, 6]);
    expect(results.map((r) => r.logs)).toEqual([["step 1"], ["step 2"], ["step 3"]]);
    expect(results.map((r) => r.tool_calls.map((c) => c.tool))).toEqual([
      ["slow", "add"],
      ["slow", "add"],
      ["slow", "add"],
    ]);
  });
});
