/**
 * A durable step run again (ToolHost.replay): the engine hands the code the logged outcomes itself, with no
 * round trip per call, and the host checks and logs them in batches, always before a later call is made.
 */
import { describe, expect, it } from "vitest";
import type { CallOptions, ReplayOutcome, ReplayedCall, StepReplay, ToolHost } from "../../core/index.js";
import { runCode } from "../index.js";
import { limits, testHost } from "./helpers.js";

/** The in-process test host with a log to replay; `order` tells what reached the host, and when. */
function replaying(outcomes: (ReplayOutcome | null)[]) {
  const inner = testHost();
  const order: string[] = [];
  const confirmed: ReplayedCall[][] = [];
  const seqs: (number | undefined)[] = [];
  const host: ToolHost = {
    tools: () => inner.tools(),
    onCall: (l) => inner.onCall(l),
    call: (name: string, args: Record<string, unknown>, options?: CallOptions) => {
      order.push(`call ${name}`);
      seqs.push(options?.seq);
      return inner.call(name, args, options);
    },
    replay: (): StepReplay => ({
      outcomes,
      clock: "",
      confirm: (calls) => {
        order.push(`confirm ${calls.map((c) => c.seq).join(",")}`);
        confirmed.push([...calls]);
      },
    }),
  };
  return { host, inner, order, confirmed, seqs };
}

describe("replaying a step's logged calls", () => {
  it("hands the code each logged value without calling the host, and logs them all in one batch", async () => {
    const r = replaying([
      { ok: true, value: 100 },
      { ok: true, value: 200 },
      { ok: true, value: 300 },
    ]);
    const run = await runCode(
      "let s = 0; for (let i = 0; i < 3; i++) s += await add(i, 1); return s;",
      r.host,
      limits(),
    );
    expect(run.error).toBeUndefined();
    expect(run.value).toBe(600); // the logged values, not 1 + 2 + 3
    expect(r.inner.received).toEqual([]);
    expect(r.order).toEqual(["confirm 0,1,2"]);
    expect(r.confirmed[0]).toEqual([
      { seq: 0, call: { name: "math.add", args: { a: 0, b: 1 } } },
      { seq: 1, call: { name: "math.add", args: { a: 1, b: 1 } } },
      { seq: 2, call: { name: "math.add", args: { a: 2, b: 1 } } },
    ]);
    expect(run.tool_calls.map((c) => c.ok)).toEqual([true, true, true]);
  });

  it("hands over logged values JSON cannot hold as they were: a Date, bytes, undefined", async () => {
    const r = replaying([
      { ok: true, value: { at: new Date(0), bytes: new Uint8Array([1, 2]), none: undefined } },
      { ok: true, value: undefined },
    ]);
    const run = await runCode(
      "const a = await add(1, 2); const b = await add(3, 4); return [a.at instanceof Date, a.at.getTime(), a.bytes instanceof Uint8Array, [...a.bytes], 'none' in a, b === undefined];",
      r.host,
      limits(),
    );
    expect(run.value).toEqual([true, 0, true, [1, 2], true, true]);
    expect(r.inner.received).toEqual([]);
  });

  it("throws a logged failure as the ToolError it was", async () => {
    const r = replaying([
      { ok: false, code: "TOOL_ERROR", tool: "math.divide", message: "division by zero" },
    ]);
    const run = await runCode(
      "try { await divide(1, 0); return 'no'; } catch (e) { return [e.name, e.code, e.tool, e.message]; }",
      r.host,
      limits(),
    );
    expect(run.value).toEqual(["ToolError", "TOOL_ERROR", "math.divide", "division by zero"]);
    expect(r.inner.received).toEqual([]);
  });

  it("makes the calls past the log for real, after the replayed ones are logged, numbered on from them", async () => {
    const r = replaying([{ ok: true, value: 10 }]);
    const run = await runCode("const a = await add(1, 1); return add(a, 5);", r.host, limits());
    expect(run.value).toBe(15);
    expect(r.order).toEqual(["confirm 0", "call math.add"]);
    expect(r.seqs).toEqual([1]);
    expect(r.inner.received).toEqual([{ name: "math.add", args: { a: 10, b: 5 } }]);
  });

  it("leaves a place with nothing logged to the host, so a call refused there keeps its place", async () => {
    // The first run: a call to no tool (refused in the sandbox, never logged), then add. Run again, the
    // refused call reaches the host again and add still gets the outcome logged at place 1.
    const r = replaying([null, { ok: true, value: 7 }]);
    const run = await runCode(
      "let e; try { await callTool('nope', {}); } catch (x) { e = x.code; } return [e, await add(1, 2)];",
      r.host,
      limits(),
    );
    expect(run.value).toEqual(["TOOL_NOT_FOUND", 7]);
    expect(r.confirmed).toEqual([[{ seq: 1, call: { name: "math.add", args: { a: 1, b: 2 } } }]]);
    expect(r.inner.received).toEqual([]);
  });

  it("tells the host what the code asked for, even when no tool takes it now", async () => {
    const r = replaying([{ ok: true, value: 1 }]);
    const run = await runCode("return callTool('gone.tool', { x: 1 });", r.host, limits());
    expect(run.value).toBe(1);
    expect(r.confirmed).toEqual([[{ seq: 0, call: undefined }]]);
  });

  it("answers calls made in parallel from the log in the order the code made them", async () => {
    const r = replaying([
      { ok: true, value: "a" },
      { ok: true, value: "b" },
    ]);
    const run = await runCode(
      "return parallel([() => echo({ text: 'x' }), () => echo({ text: 'y' }), () => echo({ text: 'z' })]);",
      r.host,
      limits(),
    );
    expect(run.value).toEqual(["a", "b", { text: "z", times: 1 }]);
    expect(r.order).toEqual(["confirm 0,1", "call text.echo"]);
    expect(r.seqs).toEqual([2]);
  });

  describe("calls sent as the log has them", () => {
    const logged = (value: number, argsJson: string): ReplayOutcome => ({
      ok: true,
      value,
      logged: { name: "math.add", argsJson },
    });
    /** Logged calls add({ a, b: 1 }), one per `a`, each logged with the value 1, 2, 3, … */
    const loggedAdds = (...as: number[]) => as.map((a, i) => logged(i + 1, `{"a":${a},"b":1}`));

    it("are only counted: the host learns their places, not their arguments, and the step's records hold them", async () => {
      const r = replaying([logged(100, '{"a":0,"b":1}'), logged(200, '{"a":1,"b":1}')]);
      const run = await runCode(
        "let s = 0; for (let i = 0; i < 2; i++) s += await add({ a: i, b: 1 }); return s;",
        r.host,
        limits(),
      );
      expect(run.error).toBeUndefined();
      expect(run.value).toBe(300);
      expect(r.inner.received).toEqual([]);
      expect(r.confirmed).toEqual([
        [
          { seq: 0, asLogged: true },
          { seq: 1, asLogged: true },
        ],
      ]);
      expect(run.tool_calls.map((c) => [c.server, c.tool, c.ok])).toEqual([
        ["math", "add", true],
        ["math", "add", true],
      ]);
    });

    it("are matched however the code names the tool: its function, its server's, or callTool with its full name", async () => {
      const r = replaying(loggedAdds(0, 1, 2, 3));
      const run = await runCode(
        `return [await add({ a: 0, b: 1 }), await math.add({ a: 1, b: 1 }), await callTool("math.add", { a: 2, b: 1 }),
          await callTool("add", { a: 3, b: 1 })];`,
        r.host,
        limits(),
      );
      expect(run.value).toEqual([1, 2, 3, 4]);
      expect(r.inner.received).toEqual([]);
      // By its plain name callTool reaches the host, which finds the call is the logged one all the same.
      expect(r.confirmed.flat()).toEqual([
        { seq: 0, asLogged: true },
        { seq: 1, asLogged: true },
        { seq: 2, asLogged: true },
        { seq: 3, call: { name: "math.add", args: { a: 3, b: 1 } } },
      ]);
    });

    it("a call whose arguments' toJSON makes a call meanwhile goes to the host, at the place after that call", async () => {
      const r = replaying(loggedAdds(0, 1));
      const run = await runCode(
        `const inner = [];
        const arg = { toJSON() { if (inner.length === 0) inner.push(add({ a: 0, b: 1 })); return { a: 0, b: 1 }; } };
        const outer = await add(arg);
        return [await inner[0], outer];`,
        r.host,
        limits(),
      );
      expect(run.value).toEqual([1, 2]);
      // The host checks the outer call against the log's second call, and so finds that the code left its path.
      expect(r.confirmed.flat()).toEqual([
        { seq: 0, asLogged: true },
        { seq: 1, call: { name: "math.add", args: { a: 0, b: 1 } } },
      ]);
    });

    it("a call sent otherwise (other arguments, positional ones, another order of keys) goes to the host whole, in its place", async () => {
      const r = replaying(loggedAdds(0, 5, 2, 3));
      const run = await runCode(
        "const a = await add({ a: 0, b: 1 }); const b = await add({ a: 1, b: 1 }); const c = await add(2, 1); const d = await add({ b: 1, a: 3 }); return [a, b, c, d];",
        r.host,
        limits(),
      );
      expect(run.value).toEqual([1, 2, 3, 4]);
      expect(r.confirmed).toEqual([
        [
          { seq: 0, asLogged: true },
          { seq: 1, call: { name: "math.add", args: { a: 1, b: 1 } } },
          { seq: 2, call: { name: "math.add", args: { a: 2, b: 1 } } },
          { seq: 3, call: { name: "math.add", args: { a: 3, b: 1 } } },
        ],
      ]);
    });

    it("are compared as JSON writes their arguments, as the log keys calls: NaN is null, a Date its ISO text", async () => {
      const r = replaying([
        logged(1, '{"a":null,"b":"1970-01-01T00:00:00.000Z"}'),
        logged(2, '{"a":1,"b":2}'),
      ]);
      const run = await runCode(
        "const a = await add({ a: NaN, b: new Date(0) }); let b; try { b = await add({ a: 1n, b: 2 }); } catch (e) { b = e.code; } return [a, b];",
        r.host,
        limits(),
      );
      expect(run.value).toEqual([1, 2]);
      // JSON cannot write a bigint: that call goes to the host whole, which decodes it (to the number the tool
      // takes) and checks it against the log itself.
      expect(r.confirmed.flat()).toEqual([
        { seq: 0, asLogged: true },
        { seq: 1, call: { name: "math.add", args: { a: 1, b: 2 } } },
      ]);
    });

    it("count toward max_tool_calls as every call does", async () => {
      const r = replaying([logged(1, '{"a":0,"b":1}'), logged(2, '{"a":1,"b":1}')]);
      const run = await runCode(
        "let s = 0; for (let i = 0; i < 2; i++) s += await add({ a: i, b: 1 }); return s;",
        r.host,
        limits({ max_tool_calls: 1 }),
      );
      expect(run.ok).toBe(false);
      expect(run.error?.code).toBe("SANDBOX_TOOL_LIMIT");
    });

    it("count toward max_tool_calls with the calls their arguments' toJSON makes meanwhile", async () => {
      const r = replaying(loggedAdds(0, 1));
      const run = await runCode(
        `let asked = false;
        const arg = { toJSON() { if (!asked) { asked = true; notes.write("x"); } return { a: 1, b: 1 }; } };
        await add({ a: 0, b: 1 });
        return await add(arg);`,
        r.host,
        limits({ max_tool_calls: 2 }),
        { namespaces: { notes: { write: async () => "ok" } } },
      );
      expect(run.error?.code).toBe("SANDBOX_TOOL_LIMIT");
    });

    it("a logged call without its text (the log redacted or cut it) goes to the host whole", async () => {
      const r = replaying([logged(1, '{"a":0,"b":1}'), { ok: true, value: 2 }]);
      const run = await runCode(
        "await add({ a: 0, b: 1 }); return await add({ a: 1, b: 1 });",
        r.host,
        limits(),
      );
      expect(run.value).toBe(2);
      expect(r.confirmed.flat()).toEqual([
        { seq: 0, asLogged: true },
        { seq: 1, call: { name: "math.add", args: { a: 1, b: 1 } } },
      ]);
    });
  });
});
