/**
 * pda in a pipeline, through the real CLI: the query read from stdin (`pda run -`, or piped with no argument),
 * only the answer on stdout with --quiet, one duration syntax for every timeout flag, and errors as JSON
 * objects with a code under --json, on stdout where the JSON reader is.
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG_DIR, distPath } from "../core/index.js";
import { cliFolder, type CliFolder } from "./harness.js";
import { parseDurationMs } from "./duration.js";
import { SessionStore } from "../memory/index.js";

const DEMO = `scripted:${join(DEFAULT_CONFIG_DIR, "demo", "calculator.yaml")}`;
const QUERY = "What is 32 + 5 - 3 * 2";

let cli: CliFolder;
beforeAll(() => {
  cli = cliFolder("pda-pipes-");
});
afterAll(() => cli.close());

describe("the query from stdin and the answer alone", () => {
  it("`pda run - --quiet` reads the query from stdin and prints only the answer", async () => {
    const r = await cli.pda(["run", "-", "--quiet", "--model", DEMO], undefined, {}, `${QUERY}\n`);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("32 + 5 - 3 * 2 = 31\n");
    // The session logged the query as piped, without its newline.
    const list = await cli.pda(["sessions", "--json"]);
    expect(JSON.parse(list.stdout)[0].original_query).toBe(QUERY);
  }, 60_000);

  it("a query piped in with no argument is read too; without --quiet the trace is on stderr", async () => {
    const r = await cli.pda(["run", "--model", DEMO], undefined, {}, QUERY);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/perception/);
    expect(r.stderr).toMatch(/^answer$/m);
    expect(r.stdout).toBe("32 + 5 - 3 * 2 = 31\n");
  }, 60_000);

  it("empty stdin, and --json with --quiet, exit 2 naming what was wrong", async () => {
    const empty = await cli.pda(["run", "-", "--model", DEMO], undefined, {}, "");
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("the query is empty (standard input held none)");
    const both = await cli.pda(["run", QUERY, "--json", "--quiet", "--model", DEMO]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("--json and --quiet: choose one");
  }, 60_000);
});

describe("one duration syntax", () => {
  it("reads 30s, 2m, 500ms, 1h and plain milliseconds", () => {
    expect(parseDurationMs("30s", "--timeout")).toBe(30_000);
    expect(parseDurationMs("2m", "--timeout")).toBe(120_000);
    expect(parseDurationMs("500ms", "--timeout")).toBe(500);
    expect(parseDurationMs("1.5s", "--timeout")).toBe(1500);
    expect(parseDurationMs("1h", "--timeout")).toBe(3_600_000);
    expect(parseDurationMs("1500", "--timeout")).toBe(1500);
    expect(() => parseDurationMs("soon", "--timeout")).toThrow(/--timeout soon: expected a duration/);
    expect(() => parseDurationMs("0s", "--timeout")).toThrow(/more than zero/);
    expect(() => parseDurationMs("-5s", "--timeout")).toThrow(/expected a duration/);
  });

  it("`call --timeout` takes it, and a bad value exits 2 naming the flag", async () => {
    const ok = await cli.pda(["call", "math.add", '{"a": 2, "b": 3}', "--timeout", "30s"]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain("5");
    const bad = await cli.pda(["call", "math.add", '{"a": 2, "b": 3}', "--timeout", "2 minutes"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--timeout 2 minutes: expected a duration like 30s, 2m, 500ms");
  }, 60_000);

  it("`batch --timeout` refuses a bad value before anything starts", async () => {
    const input = join(cli.dir, "q.csv");
    writeFileSync(input, `Query\n${QUERY}\n`);
    const r = await cli.pda([
      "batch",
      input,
      "--out",
      join(cli.dir, "out"),
      "--timeout",
      "fast",
      "--model",
      DEMO,
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--timeout fast: expected a duration");
  }, 60_000);
});

describe("errors as JSON under --json", () => {
  const jsonError = (stdout: string) => (JSON.parse(stdout) as { error: Record<string, unknown> }).error;

  it("a command's error, a bad path, a usage error and a failed tool call each print {error: {code, …}}", async () => {
    SessionStore.open(join(cli.dir, "pda.db")).close(); // a store, so the unknown id is what fails
    const unknown = await cli.pda(["show", "zzzz", "--json"]);
    expect(unknown.code).toBe(2);
    expect(jsonError(unknown.stdout)).toMatchObject({ code: "STORE_NOT_FOUND", exit_code: 2 });
    expect(jsonError(unknown.stdout).message).toContain("zzzz");

    const report = await cli.pda(["report", join(cli.dir, "no-such-run"), "--json"]);
    expect(report.code).toBe(2);
    expect(jsonError(report.stdout)).toMatchObject({ exit_code: 2 });
    expect(jsonError(report.stdout).message).toContain("no-such-run");

    const usage = await cli.pda(["sessions", "--bogus", "--json"]);
    expect(usage.code).toBe(2);
    expect(jsonError(usage.stdout)).toMatchObject({ code: "USAGE", message: "unknown option '--bogus'" });

    const tool = await cli.pda(["call", "math.divide", '{"a": 1, "b": 0}', "--json"]);
    expect(tool.code).toBe(1);
    expect(jsonError(tool.stdout)).toMatchObject({ code: "TOOL_ERROR", exit_code: 1 });
    const nosuch = await cli.pda(["call", "math.nosuch", "{}", "--json"]);
    expect(nosuch.code).toBe(2);
    expect(jsonError(nosuch.stdout)).toMatchObject({ code: "TOOL_NOT_FOUND", exit_code: 2 });

    // Without --json the error stays a line on stderr and stdout stays empty.
    const plain = await cli.pda(["show", "zzzz"]);
    expect(plain.stdout).toBe("");
    expect(plain.stderr).toContain("zzzz");
  }, 120_000);

  it("`report --json` and `batch --json` print their results as JSON", async () => {
    const input = join(cli.dir, "one.csv");
    writeFileSync(input, `Query,Expected\n${QUERY},31\n`);
    const out = join(cli.dir, "run");
    const batch = await cli.pda(["batch", input, "--out", out, "--json", "--model", DEMO]);
    expect(batch.code, batch.stderr).toBe(0);
    expect(JSON.parse(batch.stdout)).toMatchObject({ status: "finished", done: 1, total: 1, succeeded: 1 });
    const report = await cli.pda(["report", out, "--json"]);
    expect(report.code, report.stderr).toBe(0);
    const r = JSON.parse(report.stdout) as { markdown: string; files: { md: string } };
    expect(r.markdown).toContain("# Batch report");
    expect(r.files.md).toContain(out);
  }, 120_000);
});

describe("--json on worker, ui, robot render, memory remember, export and exec", () => {
  const jsonError = (stdout: string) => (JSON.parse(stdout) as { error: Record<string, unknown> }).error;

  it("each one's bad argument: a JSON error with a code on stdout, the exit code as without --json", async () => {
    const cases: [string[], string, RegExp][] = [
      [["worker", "--queue", "notaurl"], "CONFIG_INVALID", /--queue notaurl/],
      [
        ["worker", "--queue", "redis://127.0.0.1:1", "--concurrency", "0"],
        "CONFIG_INVALID",
        /--concurrency 0/,
      ],
      [["ui", "--port", "99999"], "CONFIG_INVALID", /--port/],
      [["robot", "render", "--task", "nosuch", "--seed", "1"], "CONFIG_INVALID", /unknown task "nosuch"/],
      [["robot", "render", "--task", "stack_blocks", "--seed", "x"], "CONFIG_INVALID", /--seed/],
      [["memory", "remember", "zzzz"], "STORE_NOT_FOUND", /zzzz/],
      [["export", "zzzz"], "STORE_NOT_FOUND", /zzzz/],
      [["exec", join(cli.dir, "no-such.js")], "CONFIG_INVALID", /no-such\.js/],
      [["worker"], "USAGE", /required option '--queue <url>'/],
    ];
    // A store exists, so the unknown id is what is wrong.
    expect((await cli.pda(["run", QUERY, "--quiet", "--model", DEMO])).code).toBe(0);
    for (const [args, code, message] of cases) {
      const plain = await cli.pda(args);
      const json = await cli.pda([...args, "--json"]);
      const what = args.join(" ");
      expect(json.code, what).toBe(plain.code);
      expect(json.code, what).toBeGreaterThan(0);
      expect(jsonError(json.stdout), what).toMatchObject({ code, exit_code: plain.code });
      expect(jsonError(json.stdout).message, what).toMatch(message);
      expect(plain.stdout, what).toBe("");
    }
  }, 240_000);

  it("their results as JSON: robot render, memory remember, export --out, ui's address", async () => {
    const png = join(cli.dir, "scene.png");
    const render = await cli.pda([
      "robot",
      "render",
      "--task",
      "stack_blocks",
      "--seed",
      "3",
      "--size",
      "128",
      "--out",
      png,
      "--json",
    ]);
    expect(render.code, render.stderr).toBe(0);
    expect(JSON.parse(render.stdout)).toMatchObject({
      file: png,
      size: 128,
      task: "stack_blocks",
      seed: 3,
      view: "top",
    });
    expect(readFileSync(png).subarray(1, 4).toString()).toBe("PNG");

    expect((await cli.pda(["run", QUERY, "--quiet", "--model", DEMO])).code).toBe(0);
    const [session] = JSON.parse((await cli.pda(["sessions", "--json"])).stdout) as { session_id: string }[];
    const id = session!.session_id;
    const remember = await cli.pda(["memory", "remember", id.slice(0, 8), "--json"]);
    expect(remember.code, remember.stderr).toBe(0);
    expect(JSON.parse(remember.stdout)).toEqual({ session_id: id, remembered: true });

    const file = join(cli.dir, "session.json");
    const exported = await cli.pda(["export", id, "--out", file, "--json"]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(JSON.parse(exported.stdout)).toEqual({ session_id: id, file });
    expect(JSON.parse(readFileSync(file, "utf8"))).toMatchObject({ session_id: id });

    const ui = spawn(
      process.execPath,
      [distPath("main.js"), "--db", join(cli.dir, "pda.db"), "ui", "--port", "0", "--json"],
      {
        env: { PATH: process.env.PATH ?? "", HOME: cli.dir, NO_COLOR: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    try {
      let out = "";
      ui.stdout.on("data", (d: Buffer) => (out += d.toString()));
      await expect.poll(() => out.includes("\n"), { timeout: 60_000 }).toBe(true);
      const address = JSON.parse(out) as { url: string; token_required: boolean };
      expect(address.token_required).toBe(false);
      expect((await fetch(new URL("/api/sessions", address.url))).status).toBe(200);
    } finally {
      ui.kill("SIGTERM");
    }
  }, 240_000);
});
