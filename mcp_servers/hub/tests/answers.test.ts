/**
 * What third-party servers send that the hub must not misread (issue #22): an answer outside the server's own
 * output schema is the server's fault, not the caller's; an id past 2^53 in text keeps every digit; a
 * description that starts with a blank line still has a summary. A real stdio server (testing/hostile_server.ts).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../../core/index.js";
import { MultiMCP } from "../../index.js";
import { HOSTILE_SERVER, failure } from "./helpers.js";

describe("answers from a careless server", () => {
  let hub: MultiMCP;
  beforeAll(async () => {
    hub = await MultiMCP.start({
      servers: [{ id: "care", command: process.execPath, args: [HOSTILE_SERVER, "--liar"] }],
    });
  });
  afterAll(async () => hub.close());

  it("an answer outside the tool's declared output schema is TOOL_BAD_OUTPUT naming the server", async () => {
    const e = await failure(hub.call("care.liar", {}));
    expect(e.code).toBe("TOOL_BAD_OUTPUT");
    expect(e.message).toMatch(/^server "care" answered care\.liar outside its own output schema: /);
    // The session goes on: the next call works.
    expect(await hub.call("care.indented", {})).toBe("read");
  });

  it("text holding an integer past 2^53 is kept as the exact text", async () => {
    const value = await hub.call("care.bigid", {});
    expect(value).toBe('{"id": 12345678901234567890, "n": 1}');
    expect(await hub.call("care.flood", { n: 0 })).toEqual({ sent: 0 });
  });
});

describe("pda tools", () => {
  const dir = mkdtempSync(join(tmpdir(), "pda-answers-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("shows the first line that says something of a description that starts blank", () => {
    const yaml = join(dir, "hub.yaml");
    writeFileSync(
      yaml,
      [
        "servers:",
        "  - id: care",
        `    command: ${JSON.stringify(process.execPath)}`,
        `    args: [${JSON.stringify(HOSTILE_SERVER)}, --liar]`,
      ].join("\n"),
    );
    const r = spawnSync(
      process.execPath,
      [join(PACKAGE_ROOT, "dist/main.js"), "--db", join(dir, "pda.db"), "--config", yaml, "tools"],
      { encoding: "utf8", timeout: 60_000, env: { ...process.env, NO_COLOR: "1" } },
    );
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/care\.indented\(\)[^\n]*\n {2}Read a file\.\n/);
  });

  it("`pda call` checks a result against the tool's output schema (the bundled CLI builds its validator at first use)", () => {
    const yaml = join(dir, "liar.yaml");
    writeFileSync(
      yaml,
      [
        "servers:",
        "  - id: care",
        `    command: ${JSON.stringify(process.execPath)}`,
        `    args: [${JSON.stringify(HOSTILE_SERVER)}, --liar]`,
      ].join("\n"),
    );
    const r = spawnSync(
      process.execPath,
      [
        join(PACKAGE_ROOT, "dist/main.js"),
        "--db",
        join(dir, "liar.db"),
        "--config",
        yaml,
        "call",
        "care.liar",
      ],
      { encoding: "utf8", timeout: 60_000, env: { ...process.env, NO_COLOR: "1" } },
    );
    expect(r.status).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/answered care\.liar outside its own output schema/);
  });
});
