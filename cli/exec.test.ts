/** `pda exec` as a child process against the real math server, with a config folder made for the test. */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { distPath } from "../core/index.js";

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-exec-"));
  writeFileSync(
    join(dir, "mcp_server_config.yaml"),
    `servers:\n  - id: math\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(distPath("mcp_servers/math/server.js"))}]\n`,
  );
  writeFileSync(
    join(dir, "profiles.yaml"),
    "default: default\nprofiles:\n  default:\n    sandbox:\n      timeout_ms: 10000\n      max_tool_calls: 50\n  stingy:\n    sandbox:\n      max_tool_calls: 1\n",
  );
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function pda(args: string[], input?: string) {
  const r = spawnSync(process.execPath, [distPath("main.js"), "--config", dir, "exec", ...args], {
    input,
    encoding: "utf8",
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("pda exec", () => {
  it("runs code from standard input and prints the result as JSON; console lines go to stderr live", () => {
    const r = pda(
      ["-"],
      "const p = await multiply(3, 2);\nconsole.log('product', p);\nreturn subtract(await add(32, 5), p)",
    );
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout);
    expect(result).toMatchObject({ ok: true, value: 31, logs: ["product 6"] });
    expect(result.tool_calls).toHaveLength(3);
    expect(r.stderr).toContain("product 6");
  });

  it("runs a file; a failed step exits 1 with its typed error in the JSON", () => {
    const file = join(dir, "fail.js");
    writeFileSync(file, "return await divide(1, 0)");
    const r = pda([file]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({
      ok: false,
      error: { code: "TOOL_ERROR", tool: "math.divide" },
    });
  });

  it("--max-tool-calls and --timeout override the profile, which --profile picks", () => {
    const code = "for (let i = 0; i < 3; i++) await add(i, 1);\nreturn 'done'";
    expect(pda(["-"], code).code).toBe(0);
    const limited = pda(["-", "--max-tool-calls", "2"], code);
    expect(limited.code).toBe(1);
    expect(JSON.parse(limited.stdout).error.code).toBe("SANDBOX_TOOL_LIMIT");
    const stingy = pda(["-", "--profile", "stingy"], code);
    expect(JSON.parse(stingy.stdout).error.code).toBe("SANDBOX_TOOL_LIMIT");
    const loop = pda(["-", "--timeout", "300ms"], "for (;;) {}");
    expect(loop.code).toBe(1);
    expect(JSON.parse(loop.stdout).error.code).toBe("SANDBOX_TIMEOUT");
    // The old flag still works, with the same syntax.
    const old = pda(["-", "--timeout-ms", "300"], "for (;;) {}");
    expect(JSON.parse(old.stdout).error.code).toBe("SANDBOX_TIMEOUT");
  });

  it("bad usage exits 2 with a message naming what is wrong", () => {
    const badNumber = pda(["-", "--timeout", "soon"], "return 1");
    expect(badNumber.code).toBe(2);
    expect(badNumber.stderr).toContain("--timeout soon: expected a duration like 30s, 2m, 500ms");
    const missing = pda([join(dir, "nope.js")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("cannot read");
    const profile = pda(["-", "--profile", "nosuch"], "return 1");
    expect(profile.code).toBe(2);
  });
});
