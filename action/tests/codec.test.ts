/** The value codec: host half alone, and host ↔ sandbox halves agreeing on every kind of value. */
import { describe, expect, it } from "vitest";
import { Opaque, decode, decodeValue, encode } from "../codec.js";
import { runCode } from "../index.js";
import { limits, testHost } from "./helpers.js";

const rich = () => ({
  date: new Date("2024-02-03T04:05:06.789Z"),
  invalidDate: new Date(Number.NaN),
  big: -(2n ** 80n),
  bytes: new Uint8Array([0, 127, 128, 255]),
  floats: new Float32Array([1.5, -2]),
  map: new Map<unknown, unknown>([
    ["k", new Date(0)],
    [2, [undefined]],
  ]),
  set: new Set([1, "two"]),
  list: [1, undefined, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, null],
  nothing: undefined,
  $pda: "user data",
  $$pda: "more user data",
  nested: { deep: { $pda: { inner: true } } },
});

describe("codec (host half)", () => {
  it("round-trips values JSON cannot carry", () => {
    const value = rich();
    const back = decode(encode(value)) as ReturnType<typeof rich>;
    expect(back).toEqual(value);
    expect("nothing" in back).toBe(true);
    expect(back.list).toHaveLength(6);
    expect(back.floats).toBeInstanceOf(Float32Array);
    expect(back.big).toBe(-(2n ** 80n));
  });

  it("writes the documented tags", () => {
    expect(
      JSON.parse(
        encode({ d: new Date(0), b: 1n, u: undefined, n: Number.NaN, x: new Uint8Array([1, 2, 3]) }),
      ),
    ).toEqual({
      d: { $pda: "date", value: "1970-01-01T00:00:00.000Z" },
      b: { $pda: "bigint", value: "1" },
      u: { $pda: "undefined" },
      n: { $pda: "number", value: "NaN" },
      x: { $pda: "bytes", base64: "AQID" },
    });
    expect(JSON.parse(encode({ $pda: 1, $$pda: 2 }))).toEqual({ $$pda: 1, $$$pda: 2 });
    expect(encode(undefined)).toBe('{"$pda":"undefined"}');
  });

  it("keeps functions, symbols and RegExps from the sandbox opaque, and refuses cycles", () => {
    const fn = decode('{"$pda":"function","name":"f"}');
    expect(fn).toBeInstanceOf(Opaque);
    expect(encode(fn)).toBe('{"$pda":"function","name":"f"}');
    expect(decode('{"$pda":"regexp","source":"(a+)+$","flags":""}')).toBeInstanceOf(Opaque);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => encode(cycle)).toThrow(TypeError);
  });

  it("keeps a __proto__ key as data", () => {
    const back = decode('{"__proto__": {"polluted": true}, "$pda_not_a_tag": 1}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect(Object.prototype.hasOwnProperty.call(back, "__proto__")).toBe(true);
    expect(back.polluted).toBeUndefined();
    const tagged = decode(
      '{"__proto__": {"polluted": true}, "d": {"$pda": "date", "value": null}}',
    ) as Record<string, unknown>;
    expect(tagged.polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("codec (host ↔ sandbox)", () => {
  it("a host value passed into the sandbox and returned comes back equal", async () => {
    const r = await runCode("return await host.give()", testHost(), limits(), {
      namespaces: { host: { give: async () => rich() } },
    });
    expect(r.error).toBeUndefined();
    expect(decodeValue(r.value)).toEqual(rich());
  });

  it("the sandbox revives each tag as the native value", async () => {
    const r = await runCode(
      "const v = await host.give();\nreturn [v.date instanceof Date && v.date.getTime(), isNaN(v.invalidDate), typeof v.big, v.bytes instanceof Uint8Array && v.bytes[3], v.floats instanceof Float32Array && v.floats[0], v.map.get('k') instanceof Date, v.set.has('two'), v.list[1] === undefined && 1 in v.list, Number.isNaN(v.list[2]), v.list[3] === Infinity, 'nothing' in v, v.$pda, v.$$pda, v.nested.deep.$pda.inner]",
      testHost(),
      limits(),
      { namespaces: { host: { give: async () => rich() } } },
    );
    expect(r.error).toBeUndefined();
    expect(r.value).toEqual([
      Date.parse("2024-02-03T04:05:06.789Z"),
      true,
      "bigint",
      255,
      1.5,
      true,
      true,
      true,
      true,
      true,
      true,
      "user data",
      "more user data",
      true,
    ]);
  });

  it("values made in the sandbox decode on the host to the same natives", async () => {
    const r = await runCode(
      "return { date: new Date('2024-02-03T04:05:06.789Z'), invalidDate: new Date(NaN), big: -(2n ** 80n), bytes: new Uint8Array([0, 127, 128, 255]), floats: new Float32Array([1.5, -2]), map: new Map([['k', new Date(0)], [2, [undefined]]]), set: new Set([1, 'two']), list: [1, undefined, NaN, Infinity, -Infinity, null], nothing: undefined, $pda: 'user data', $$pda: 'more user data', nested: { deep: { $pda: { inner: true } } } }",
      testHost(),
      limits(),
    );
    expect(r.error).toBeUndefined();
    expect(decodeValue(r.value)).toEqual(rich());
  });

  it("a cycle in the returned value is an error that says so", async () => {
    const r = await runCode("const a = {}; a.self = a;\nreturn a", testHost(), limits());
    expect(r.error?.code).toBe("SANDBOX_RUNTIME");
    expect(r.error?.message).toContain("return value cannot be sent");
  });
});
