/**
 * Every YAML loader reads within the same limits: an alias bomb, an oversized file or absurd nesting is a
 * ConfigError naming the file, never a stack trace or a hang.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadAgentsConfig } from "../agent/index.js";
import { ConfigError } from "../core/index.js";
import { ScriptedChannel } from "../hil/index.js";
import { ScriptedTransport, loadModelsConfig } from "../llm/index.js";
import { loadHubConfig } from "../mcp_servers/hub/index.js";
import { YAML_LIMITS, loadProfile, parseYaml } from "./index.js";

const dir = mkdtempSync(join(tmpdir(), "pda-yaml-limits-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Nine levels of nine aliases each: 9^9 (387 million) strings once expanded, from about 400 bytes. */
const BOMB = [
  'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
  ...["b", "c", "d", "e", "f", "g", "h", "i"].map(
    (k, i) => `${k}: &${k} [${Array(9).fill(`*${"abcdefgh"[i]}`).join(", ")}]`,
  ),
].join("\n");
const HUGE = `a: "${"x".repeat(YAML_LIMITS.maxChars)}"\n`;
const DEEP = `${"[".repeat(100_000)}${"]".repeat(100_000)}\n`;

/** Each loader, given a file holding `text` under the name it reads. */
const LOADERS: Array<[string, string, (file: string) => unknown]> = [
  ["profiles.yaml", "profiles.yaml", () => loadProfile(dir)],
  ["agents.yaml", "agents.yaml", () => loadAgentsConfig(dir)],
  ["models.yaml", "models.yaml", () => loadModelsConfig(dir)],
  ["hub config", "mcp_server_config.yaml", (f) => loadHubConfig(f)],
  ["scripted model", "script.yaml", (f) => ScriptedTransport.fromFile(f)],
  ["scripted human answers", "answers.yaml", (f) => ScriptedChannel.fromFile(f)],
];

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

describe("YAML limits", () => {
  for (const [what, name, load] of LOADERS) {
    it(`${what}: an alias bomb, a file too big and nesting too deep are config errors naming the file`, () => {
      const file = join(dir, name);
      for (const [text, why] of [
        [BOMB, /more than 1000 alias expansions/],
        [HUGE, /characters, over the \d+ a YAML file may have/],
        [DEEP, /:1: nested more than 100 levels deep/],
      ] as const) {
        writeFileSync(file, text);
        const e = configError(() => load(file));
        expect(e.message, what).toContain(file);
        expect(e.message, what).toMatch(why);
      }
    });
  }

  it("a few aliases are fine", () => {
    const { value } = parseYaml("x.yaml", "base: &b {a: 1}\none: *b\ntwo: *b\n");
    expect(value).toEqual({ base: { a: 1 }, one: { a: 1 }, two: { a: 1 } });
  });
});
