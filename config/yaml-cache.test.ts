/**
 * parseYaml keeps each text's parsed value as JSON in the cache folder, keyed by the text: a text parsed before
 * is read back from there, an edited one is parsed again, and errors still name the line.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError } from "../core/index.js";
import { YAML_CACHE_ENTRIES, parseConfigText, parseYaml } from "./index.js";

const dir = mkdtempSync(join(tmpdir(), "pda-yaml-cache-"));
const saved = process.env.PDA_CACHE_DIR;
beforeAll(() => {
  process.env.PDA_CACHE_DIR = dir;
});
afterAll(() => {
  if (saved === undefined) delete process.env.PDA_CACHE_DIR;
  else process.env.PDA_CACHE_DIR = saved;
  rmSync(dir, { recursive: true, force: true });
});

const entries = () => readdirSync(dir).filter((f) => f.endsWith(".json"));

describe("the YAML parse cache", () => {
  it("reads a text parsed before from its cache file, a fresh copy each time", () => {
    const text = "servers:\n  - id: math\n    args: [a, b]\n";
    const first = parseYaml("a.yaml", text).value;
    expect(first).toEqual({ servers: [{ id: "math", args: ["a", "b"] }] });
    const [file] = entries();
    expect(entries()).toHaveLength(1);
    // What the cache holds is what the next parse of the same text gives.
    writeFileSync(join(dir, file!), JSON.stringify({ from: "cache" }));
    const again = parseYaml("b.yaml", text).value;
    expect(again).toEqual({ from: "cache" });
    expect(parseYaml("b.yaml", text).value).not.toBe(again);
    // A torn file is parsed again and written over.
    writeFileSync(join(dir, file!), '{"from": ');
    expect(parseYaml("a.yaml", text).value).toEqual(first);
    expect(JSON.parse(readFileSync(join(dir, file!), "utf8"))).toEqual(first);
  });

  it("parses an edited text again", () => {
    const before = entries().length;
    expect(parseYaml("a.yaml", "x: 1\n").value).toEqual({ x: 1 });
    expect(parseYaml("a.yaml", "x: 2\n").value).toEqual({ x: 2 });
    expect(entries()).toHaveLength(before + 2);
  });

  it("keeps no value JSON would change", () => {
    const before = entries().length;
    expect(parseYaml("a.yaml", "x: .inf\n").value).toEqual({ x: Number.POSITIVE_INFINITY });
    expect(parseYaml("a.yaml", "x: -0\n").value).toEqual({ x: -0 });
    expect(entries()).toHaveLength(before);
  });

  it("names the line of a bad field in a text read from the cache", () => {
    const text = "a: 1\nb: two\n";
    const schema = z.object({ a: z.number(), b: z.number() });
    parseYaml("c.yaml", text);
    expect(() => parseConfigText("c.yaml", text, schema)).toThrow(ConfigError);
    expect(() => parseConfigText("c.yaml", text, schema)).toThrow(/^c\.yaml:2: b: /);
  });

  it("parses every time when the cache folder cannot be written", () => {
    const blocked = join(dir, "blocked");
    writeFileSync(blocked, "a file, not a folder");
    process.env.PDA_CACHE_DIR = blocked;
    try {
      expect(parseYaml("a.yaml", "y: [1, 2]\n").value).toEqual({ y: [1, 2] });
      expect(parseYaml("a.yaml", "y: [1, 2]\n").value).toEqual({ y: [1, 2] });
    } finally {
      process.env.PDA_CACHE_DIR = dir;
    }
  });
});

describe("the YAML parse cache's size", () => {
  it("keeps the newest half of its entries once it is full", () => {
    const own = mkdtempSync(join(tmpdir(), "pda-yaml-cache-full-"));
    process.env.PDA_CACHE_DIR = own;
    try {
      for (let i = 0; i < YAML_CACHE_ENTRIES; i++) parseYaml("n.yaml", `n: ${i}\n`);
      expect(readdirSync(own)).toHaveLength(YAML_CACHE_ENTRIES);
      parseYaml("n.yaml", "n: last\n");
      expect(readdirSync(own).length).toBeLessThanOrEqual(YAML_CACHE_ENTRIES / 2 + 1);
      expect(parseYaml("n.yaml", "n: last\n").value).toEqual({ n: "last" });
    } finally {
      process.env.PDA_CACHE_DIR = dir;
      rmSync(own, { recursive: true, force: true });
    }
  });
});
