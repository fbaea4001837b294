/** `summary.md` of one batch run: outcomes, correctness, usage, rate limits, tools, slow and failed queries. */
import type { QueryFile } from "./input.js";
import { errorKindsText, toolPerformance } from "./rows.js";
import type { BatchState, ItemOutcome } from "./schemas.js";

export const pct = (n: number, d: number) => (d === 0 ? "–" : `${((100 * n) / d).toFixed(1)}%`);
const cell = (s: string, n = 80) => {
  const one = s.replace(/\s+/g, " ").replace(/\|/g, "\\|").trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
};

export function table(head: string[], rows: string[][]): string {
  const line = (r: string[]) => `| ${r.join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...rows.map(line)].join("\n");
}

export function renderSummary(state: BatchState, file: QueryFile, outcomes: ItemOutcome[]): string {
  const total = file.items.length;
  const done = outcomes.length;
  const succeeded = outcomes.filter((o) => o.status === "succeeded").length;
  const checked = outcomes.filter((o) => o.correct !== null);
  const correct = checked.filter((o) => o.correct).length;
  const statuses = new Map<string, number>();
  for (const o of outcomes) statuses.set(o.status, (statuses.get(o.status) ?? 0) + 1);
  const by = new Map<string, number>();
  for (const o of checked) if (o.correct_by) by.set(o.correct_by, (by.get(o.correct_by) ?? 0) + 1);
  const sum = (f: (o: ItemOutcome) => number) => outcomes.reduce((n, o) => n + f(o), 0);

  const parts: string[] = [];
  parts.push(`# Batch run ${state.run_id}`);
  parts.push(
    [
      `- Input: \`${state.input_file}\` (${total} queries)`,
      `- Model: ${state.model}; human questions answered by ${state.hil}` +
        `${state.options.judge ? "; correctness by an LLM judge" : ""}`,
      `- Memory: ${
        state.options.memory === true
          ? `on — past sessions created before ${state.created_at} (the run's start), never this run's own`
          : "off — no past sessions shown to the agent (run with `--memory` to use them)"
      }`,
      `- Done: ${done} of ${total}${done < total ? ` — **${total - done} not run yet** (finish with \`--resume\`)` : ""}`,
      `- Succeeded: ${succeeded} (${pct(succeeded, done)} of done)`,
      `- Correct: ${correct} of ${checked.length} with an Expected answer (${pct(correct, checked.length)})` +
        (by.size ? ` — checked by ${[...by].map(([k, n]) => `${k} ${n}`).join(", ")}` : ""),
      `- Usage: ${sum((o) => o.llm_calls)} model calls, ${sum((o) => o.tokens)} tokens, ` +
        `${sum((o) => o.tools.length)} tool calls, ${(sum((o) => o.duration_ms) / 1000).toFixed(1)} s of query time`,
    ].join("\n"),
  );

  parts.push(
    `## Outcomes\n\n${table(
      ["Status", "Queries"],
      [...statuses].map(([s, n]) => [s, String(n)]),
    )}`,
  );

  parts.push(
    `## Runs of this batch\n\n` +
      table(
        [
          "Started",
          "Status",
          "Concurrency",
          "Ran",
          "429s",
          "Paused for 429s",
          "Lowest cap",
          "Other retries",
          "Peak RSS",
        ],
        state.invocations.map((i) => [
          i.started_at,
          i.finished_at ? i.status : "killed (no end recorded)",
          String(i.concurrency),
          String(i.ran),
          String(i.rate_limited),
          `${(i.rate_limit_wait_ms / 1000).toFixed(1)} s`,
          String(i.min_limit),
          String(i.transient_retries),
          `${i.peak_rss_mb} MB`,
        ]),
      ) +
      (state.invocations.some((i) => i.error)
        ? `\n\n${state.invocations
            .filter((i) => i.error)
            .map((i) => `- stopped at ${i.finished_at}: ${i.error}`)
            .join("\n")}`
        : ""),
  );

  const tools = toolPerformance(outcomes);
  if (tools.length) {
    parts.push(
      `## Tools\n\n` +
        table(
          ["Tool", "Server", "Calls", "Success", "Median ms", "P95 ms", "Errors"],
          [...tools]
            .sort((a, b) => a.success_rate - b.success_rate || b.calls - a.calls)
            .map((t) => [
              t.tool,
              t.server,
              String(t.calls),
              `${(t.success_rate * 100).toFixed(1)}%`,
              String(Math.round(t.median_ms)),
              String(Math.round(t.p95_ms)),
              errorKindsText(t.error_kinds) || "–",
            ]),
        ),
    );
  }

  const failed = outcomes.filter((o) => o.status !== "succeeded" || o.correct === false);
  if (failed.length) {
    parts.push(
      `## Not succeeded or not correct (${failed.length})\n\n` +
        table(
          ["Id", "Query", "Status", "Output", "Expected", "Why"],
          failed
            .slice(0, 50)
            .map((o) => [
              o.key,
              cell(o.query, 60),
              o.status,
              cell(o.output || "–", 40),
              cell(o.expected ?? "–", 20),
              cell(o.judge_reason ?? o.status_reason ?? (o.correct === false ? "answer differs" : ""), 80),
            ]),
        ) +
        (failed.length > 50 ? `\n\n…and ${failed.length - 50} more (see the CSV).` : ""),
    );
  }

  const slow = [...outcomes].sort((a, b) => b.duration_ms - a.duration_ms).slice(0, 5);
  if (slow.length) {
    parts.push(
      `## Slowest queries\n\n` +
        table(
          ["Id", "Query", "Duration", "Model calls", "Tokens"],
          slow.map((o) => [
            o.key,
            cell(o.query, 60),
            `${(o.duration_ms / 1000).toFixed(1)} s`,
            String(o.llm_calls),
            String(o.tokens),
          ]),
        ),
    );
  }
  return `${parts.join("\n\n")}\n`;
}
