/** The text a durable step's arguments are hashed by: the same for the same arguments, whatever key order. */
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../kernel/journal.js";

describe("canonicalJson", () => {
  it("sorts keys at every depth, and gives arguments already in order the same text", () => {
    const sorted = { a: 1, b: { c: [{ d: 1, e: 2 }], f: null }, g: "x" };
    const shuffled = { g: "x", b: { f: null, c: [{ e: 2, d: 1 }] }, a: 1 };
    expect(canonicalJson(shuffled)).toBe('{"a":1,"b":{"c":[{"d":1,"e":2}],"f":null},"g":"x"}');
    expect(canonicalJson(sorted)).toBe(canonicalJson(shuffled));
  });

  it("writes integer-like keys in JavaScript's own order (ascending), as the hashes already logged were made", () => {
    expect(canonicalJson({ 10: "a", 2: "b", x: 1 })).toBe('{"2":"b","10":"a","x":1}');
    expect(canonicalJson({ x: 1, 10: "a", 2: "b" })).toBe('{"2":"b","10":"a","x":1}');
  });

  it("writes values with a toJSON (dates) as JSON does, inside sorted objects", () => {
    const at = new Date("2026-01-01T00:00:00.000Z");
    expect(canonicalJson({ z: at, a: 1 })).toBe('{"a":1,"z":"2026-01-01T00:00:00.000Z"}');
    expect(canonicalJson(null)).toBe("null");
    expect(canonicalJson(undefined)).toBe("null");
  });
});
