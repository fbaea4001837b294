/**
 * Every command with bad paths and bad values, through the real CLI: a clear message on stderr naming what
 * was wrong, no stack trace, and the exit code DESIGN gives (2 usage or config, 3 unreachable).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG_DIR } from "../core/index.js";
import { cliFolder, type CliFolder, type PdaRun } from "./harness.js";

const DEMO = `scripted:${join(DEFAULT_CONFIG_DIR, "demo", "calculator.yaml")}`;

let cli: CliFolder;
let file: string; // a regular file, so paths under it cannot exist
let batchDir: string;
beforeAll(async () => {
  cli = cliFolder("pda-user-errors-");
  file = join(cli.dir, "a-file");
  writeFileSync(file, "not a folder\n");
  writeFileSync(join(cli.dir, "ok.csv"), "id,query\n1,What is 2 + 3\n");
  writeFileSync(join(cli.dir, "broken.csv"), 'id,query\n1,What is 2 + 3\n2,"broken "quotes" here\n');
  writeFileSync(join(cli.dir, "script.js"), "return 1 +;\n");
  mkdirSync(join(cli.dir, "empty"));
  batchDir = join(cli.dir, "batch");
  const r = await cli.pda(["batch", join(cli.dir, "ok.csv"), "--out", batchDir, "--model", DEMO]);
  expect(r.code, r.stderr).toBe(0);
}, 120_000);
afterAll(() => cli.close());

/** [what is wrong, the arguments, the exit code, what stderr must say] */
const CASES: Array<[string, () => string[], number, RegExp]> = [
  [
    "--db under a regular file (run)",
    () => ["--db", join(file, "x.db"), "run", "hi", "--model", DEMO],
    2,
    /a-file.*in the way|not a folder/,
  ],
  ["--config missing", () => ["--config", join(cli.dir, "nope"), "run", "hi"], 2, /nope/],
  ["--model unknown provider", () => ["run", "hi", "--model", "nosuch:x"], 2, /unknown provider "nosuch"/],
  ["--model script missing", () => ["run", "hi", "--model", "scripted:/nope.yaml"], 2, /nope\.yaml/],
  ["--profile unknown", () => ["run", "hi", "--model", DEMO, "--profile", "nosuch"], 2, /nosuch/],
  ["--hil unknown", () => ["run", "hi", "--model", DEMO, "--hil", "bogus"], 2, /bogus/],
  ["empty query", () => ["run", " ", "--model", DEMO], 2, /query is empty/],
  ["show unknown id", () => ["show", "zzzz"], 2, /zzzz/],
  ["replay unknown id", () => ["replay", "zzzz"], 2, /zzzz/],
  ["export unknown id", () => ["export", "zzzz"], 2, /zzzz/],
  ["resume unknown id", () => ["resume", "zzzz", "--model", DEMO], 2, /zzzz/],
  ["sessions --limit not a number", () => ["sessions", "--limit", "abc"], 2, /--limit.*abc/],
  ["sessions --status unknown", () => ["sessions", "--status", "nosuch"], 2, /nosuch/],
  ["memory search --limit negative", () => ["memory", "search", "x", "--limit", "-1"], 2, /--limit/],
  [
    "memory search --threshold not a number",
    () => ["memory", "search", "x", "--threshold", "much"],
    2,
    /--threshold/,
  ],
  [
    "memory tools --since not a time",
    () => ["memory", "tools", "--since", "yesterday"],
    2,
    /--since|yesterday/,
  ],
  [
    "batch: query file missing",
    () => ["batch", join(cli.dir, "nope.csv"), "--out", join(cli.dir, "o1"), "--model", DEMO],
    2,
    /nope\.csv/,
  ],
  [
    "batch: --out under a regular file",
    () => ["batch", join(cli.dir, "ok.csv"), "--out", join(file, "out"), "--model", DEMO],
    2,
    /a-file.*not a folder/,
  ],
  [
    "batch: --concurrency not a number",
    () => [
      "batch",
      join(cli.dir, "ok.csv"),
      "--out",
      join(cli.dir, "o2"),
      "--concurrency",
      "abc",
      "--model",
      DEMO,
    ],
    2,
    /--concurrency/,
  ],
  [
    "batch: a CSV row with broken quotes",
    () => ["batch", join(cli.dir, "broken.csv"), "--out", join(cli.dir, "o3"), "--model", DEMO],
    2,
    /broken\.csv:3: column query: unbalanced quotes/,
  ],
  ["report: folder missing", () => ["report", join(cli.dir, "nope")], 2, /nope/],
  ["report: not a batch folder", () => ["report", join(cli.dir, "empty")], 2, /empty/],
  [
    "report: --out under a regular file",
    () => ["report", batchDir, "--out", join(file, "r")],
    2,
    /a-file.*not a folder/,
  ],
  ["exec: file missing", () => ["exec", join(cli.dir, "nope.js")], 2, /nope\.js/],
  [
    "exec: --timeout-ms not a number",
    () => ["exec", join(cli.dir, "script.js"), "--timeout-ms", "soon"],
    2,
    /--timeout-ms/,
  ],
  ["call: arguments not JSON", () => ["call", "math.add", "{a:"], 2, /not valid JSON/],
  ["call: unknown tool", () => ["call", "nosuch.tool", "{}"], 2, /nosuch/],
  ["tools: unknown server", () => ["tools", "--server", "nosuch"], 2, /nosuch/],
  ["models: unknown provider", () => ["models", "--model", "nosuch"], 2, /nosuch/],
  [
    "agents runs: --since not a time",
    () => ["agents", "runs", "--since", "yesterday"],
    2,
    /--since|yesterday/,
  ],
  [
    "robot render: unknown task",
    () => ["robot", "render", "--task", "nosuch", "--seed", "1", "--out", join(cli.dir, "r.png")],
    2,
    /nosuch/,
  ],
  [
    "robot render: --out under a regular file",
    () => ["robot", "render", "--task", "stack_blocks", "--seed", "1", "--out", join(file, "r.png")],
    2,
    /a-file/,
  ],
  [
    "robot bench: --seeds not a range",
    () => ["robot", "bench", "--seeds", "x-y", "--out", join(cli.dir, "rb")],
    2,
    /--seeds|x-y/,
  ],
  ["unknown command", () => ["nosuch"], 2, /unknown command/],
];

describe("user errors: a clear message, no stack trace, exit 2 or 3", () => {
  // A few at a time: each is a process of its own.
  it.each(CASES)("%s", async (_what, args, code, says) => {
    const r: PdaRun = await cli.pda(args());
    expect(r.stderr).not.toMatch(/^\s+at /m);
    expect(r.stderr).toMatch(says);
    expect(r.code, r.stderr).toBe(code);
  });

  it("report --out a folder that does not exist yet: made, the files written", async () => {
    const out = join(cli.dir, "new", "folder");
    const r = await cli.pda(["report", batchDir, batchDir, "--out", out]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/comparison\.md/);
  });
});
