/** `pda chat`: one session per line typed, commands, and a clean end when input ends. */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../core/index.js";
import { achieved, code, snap } from "../../agent/tests/harness.js";
import { withTmux } from "../../hil/tests/tmux.js";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pda-chat-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("runs one session per line, answers /tools, and ends at the end of input", async () => {
  const script = join(dir, "chat.yaml");
  writeFileSync(
    script,
    stringify({
      perception: [snap(), achieved("6"), snap(), achieved("10")],
      decision: [
        code(["Step 0: multiply"], 0, "return await multiply(2, 3)"),
        code(["Step 0: add"], 0, "return await add(4, 6)"),
      ],
    }),
  );
  const db = join(dir, "chat.db");
  const child = spawn(
    process.execPath,
    [join(PACKAGE_ROOT, "dist/main.js"), "--db", db, "chat", "--model", `scripted:${script}`, "--json"],
    {
      env: { ...process.env, NO_COLOR: "1" },
    },
  );
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  child.stdin.end("what is 2 times 3\n/tools\n\nwhat is 4 plus 6\n");
  const exit = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  expect({ exit, err }).toEqual({ exit: 0, err: "" });
  expect(out).toMatch(/math\.multiply/);
  const summaries = [...out.matchAll(/^\{[\s\S]*?^\}/gm)].map((m) => JSON.parse(m[0]));
  expect(summaries.map((s) => [s.status, s.final_answer])).toEqual([
    ["succeeded", "6"],
    ["succeeded", "10"],
  ]);
});

it("at a terminal: a prompt, an answer per line, Ctrl-D to leave", async () => {
  const script = join(dir, "tty.yaml");
  writeFileSync(
    script,
    stringify({
      perception: [snap(), achieved("6")],
      decision: [code(["Step 0: multiply"], 0, "return await multiply(2, 3)")],
    }),
  );
  await withTmux(
    [
      "node",
      join(PACKAGE_ROOT, "dist/main.js"),
      "--db",
      join(dir, "tty.db"),
      "chat",
      "--model",
      `scripted:${script}`,
    ],
    { cols: 100, rows: 40, cwd: PACKAGE_ROOT },
    async (t) => {
      await t.waitFor("pda chat", { timeoutMs: 30_000 });
      await t.type("what is 2 times 3");
      await t.sendKeys("Enter");
      await t.waitFor("answer 6", { timeoutMs: 30_000 });
      await t.waitFor("›");
      await t.sendKeys("C-d");
      expect(await t.waitForExit({ timeoutMs: 15_000 })).toBe(0);
    },
  );
});
