/** `pda models`: the report, and the command run as a child process from dist/. */
import { execFileSync, spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../core/index.js";
import { bundledModelsConfig, parseModelsConfig } from "../llm/index.js";
import { modelsReport } from "./models.js";

describe("pda models", () => {
  it("explains the default choice and flags a role whose key is missing", () => {
    const config = parseModelsConfig(
      "m.yaml",
      "roles:\n  perception:\n    model: gemini:gemini-flash-lite-latest\n",
    );
    const r = modelsReport({ ...bundledModelsConfig(), roles: config.roles }, "m.yaml", undefined, {
      OPENAI_BASE_URL: "http://127.0.0.1:11434/v1",
    });
    expect(r.default).toMatchObject({ spec: "openai" });
    expect(r.default.reason).toMatch(/OPENAI_BASE_URL is set/);
    const perception = r.roles.find((x) => x.role === "perception")!;
    expect(perception).toMatchObject({ spec: "gemini:gemini-flash-lite-latest", ready: false });
    expect(perception.problem).toMatch(/GEMINI_API_KEY/);
    expect(r.roles.find((x) => x.role === "decision")).toMatchObject({ spec: "openai", ready: true });
  });

  it("lists the anthropic provider and checks its key for a role that uses it", () => {
    const config = parseModelsConfig(
      "m.yaml",
      "roles:\n  decision:\n    model: anthropic:claude-haiku-4-5\n",
    );
    const report = (env: NodeJS.ProcessEnv) =>
      modelsReport({ ...bundledModelsConfig(), roles: config.roles }, "m.yaml", undefined, env);
    const without = report({});
    expect(without.providers.find((p) => p.name === "anthropic")?.status).toBe("ANTHROPIC_API_KEY not set");
    expect(without.roles.find((x) => x.role === "decision")).toMatchObject({ ready: false });
    expect(without.roles.find((x) => x.role === "decision")!.problem).toMatch(/ANTHROPIC_API_KEY/);
    const withKey = report({ ANTHROPIC_API_KEY: "k" });
    expect(withKey.providers.find((p) => p.name === "anthropic")?.status).toBe("ANTHROPIC_API_KEY set");
    expect(withKey.roles.find((x) => x.role === "decision")).toMatchObject({
      spec: "anthropic:claude-haiku-4-5",
      ready: true,
      price: { input_per_mtok: 1, output_per_mtok: 5 },
    });
  });

  it("runs from dist and exits 0 with no key at all", () => {
    const main = join(PACKAGE_ROOT, "dist", "main.js");
    const env = { PATH: process.env.PATH ?? "", NO_COLOR: "1", PDA_MODEL_CACHE: "/nonexistent-cache" };
    const out = execFileSync(process.execPath, [main, "models"], { env, encoding: "utf8", timeout: 30_000 });
    expect(out).toMatch(/Default\s+llama: — neither GEMINI_API_KEY nor OPENAI_BASE_URL is set/);
    // The local default is not in the (empty) cache: not downloaded, and where it would go.
    expect(out).toMatch(/perception\s+llama:\(local default\)\s+not downloaded/);
    expect(out).toMatch(/not downloaded yet: fetched on first use .* into \/nonexistent-cache/);
    const json = spawnSync(process.execPath, [main, "models", "--json", "--model", "gemini"], {
      env,
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(json.status).toBe(0);
    const report = JSON.parse(json.stdout) as {
      roles: Array<{ role: string; ready: boolean; source: string }>;
    };
    expect(report.roles.every((x) => !x.ready && x.source === "--model")).toBe(true);
  });
});
