/** `pda report <dir> [<dir>]`: one batch run's report, or two runs compared; Markdown plus a chart. */
import type { Command } from "commander";
import { compareRuns, reportRun } from "../../performance/index.js";
import { runCommand } from "../context.js";

export function register(program: Command) {
  program
    .command("report")
    .description("report on a batch output folder, or compare two (A = the first, B = the second)")
    .argument("<dir>", "a pda batch --out folder")
    .argument("[other]", "a second folder to compare with the first")
    .option(
      "--out <dir>",
      "where to write report.md / comparison.md and the chart (default: the last folder)",
    )
    .option("--json", "print {markdown, files} as JSON")
    .action(async (dir: string, other: string | undefined, opts: { out?: string; json?: boolean }) =>
      runCommand(async () => {
        const r = other ? compareRuns(dir, other, opts.out ?? other) : reportRun(dir, opts.out ?? dir);
        if (opts.json) {
          process.stdout.write(`${JSON.stringify({ markdown: r.markdown, files: r.files }, null, 2)}\n`);
          return 0;
        }
        process.stdout.write(r.markdown);
        process.stderr.write(`wrote ${[r.files.md, r.files.svg, r.files.png].filter(Boolean).join(", ")}\n`);
        return 0;
      }),
    );
}
