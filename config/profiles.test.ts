import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, DEFAULT_CONFIG_DIR } from "../core/index.js";
import { loadProfile } from "./index.js";

const dir = mkdtempSync(join(tmpdir(), "pda-profiles-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("profiles.yaml", () => {
  it("the bundled default profile loads, with the terminal's question timeout", () => {
    const { name, profile } = loadProfile(DEFAULT_CONFIG_DIR);
    expect(name).toBe("default");
    expect(profile.hil).toEqual({ timeout_ms: 600_000, on_timeout: "defer" });
    expect(profile.budgets.max_steps).toBe(12);
    expect(profile.budgets.max_cost_usd).toBeUndefined();
  });

  it("a cost budget is read from the profile's budgets; it must be positive", () => {
    writeFileSync(
      join(dir, "profiles.yaml"),
      "default: a\nprofiles:\n  a:\n    budgets:\n      max_cost_usd: 0.25\n",
    );
    expect(loadProfile(dir).profile.budgets.max_cost_usd).toBe(0.25);
    writeFileSync(
      join(dir, "profiles.yaml"),
      "default: a\nprofiles:\n  a:\n    budgets:\n      max_cost_usd: 0\n",
    );
    expect(() => loadProfile(dir)).toThrow(/profiles\.a\.budgets\.max_cost_usd/);
  });

  it("an unknown profile names the known ones", () => {
    expect(() => loadProfile(DEFAULT_CONFIG_DIR, "nope")).toThrow(
      /no profile named "nope" \(known: default, /,
    );
  });

  it("a bad field is reported with file, line and field", () => {
    writeFileSync(
      join(dir, "profiles.yaml"),
      "default: a\nprofiles:\n  a:\n    hil:\n      on_timeout: later\n",
    );
    try {
      loadProfile(dir);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as Error).message).toMatch(/profiles\.yaml:5: profiles\.a\.hil\.on_timeout: /);
    }
  });
});
