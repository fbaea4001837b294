/**
 * Batch progress for people: a bar (done / failed / in flight / ETA / tokens) on a terminal, one plain line
 * per event otherwise (logs, CI). Rate limits and stops are printed in both.
 */
import { createRequire } from "node:module";
import type cliProgressTypes from "cli-progress";
import type { BatchEvent } from "./types.js";

// Loaded when a bar is drawn: performance/ is imported by commands that never draw one.
const require = createRequire(import.meta.url);

export interface Progress {
  onEvent(e: BatchEvent): void;
  stop(): void;
}

export function createProgress(options: {
  tty: boolean;
  stream?: NodeJS.WriteStream;
  verbose?: boolean;
}): Progress {
  const stream = options.stream ?? process.stderr;
  return options.tty ? barProgress(stream, !!options.verbose) : lineProgress(stream, !!options.verbose);
}

function note(e: BatchEvent, verbose: boolean): string | null {
  switch (e.type) {
    case "rate_limited":
      return `rate limited by ${e.provider}: everyone waits ${(e.delay_ms / 1000).toFixed(1)} s, then at most ${e.limit} model call${e.limit === 1 ? "" : "s"} in flight`;
    case "retry":
      return verbose
        ? `${e.provider} ${e.code}: retry ${e.attempt} in ${(e.delay_ms / 1000).toFixed(1)} s`
        : null;
    case "stop":
      return e.reason === "interrupted" ? null : `stopping: ${e.reason}`;
    case "item_pending":
      return `${e.key} left for --resume (${e.reason})`;
    case "worker_note":
      return `${e.key}: ${e.message}`;
    default:
      return null;
  }
}

function barProgress(stream: NodeJS.WriteStream, verbose: boolean): Progress {
  const cliProgress = require("cli-progress") as typeof cliProgressTypes;
  const multi = new cliProgress.MultiBar(
    {
      stream,
      format:
        "{bar} {value}/{total} done | {failed} failed | {in_flight} in flight | ETA {eta_formatted} | {tokens} tokens{workers}",
      hideCursor: true,
      // Ctrl-C is the batch's to handle (cancel, keep for --resume); the bar stays up meanwhile.
      gracefulExit: false,
      etaBuffer: 20,
      clearOnComplete: false,
      barsize: 30,
    },
    cliProgress.Presets.shades_classic,
  );
  let bar: cliProgressTypes.SingleBar | undefined;
  let stopped = false;
  // Queue mode: rows done per worker, shown after the tokens.
  const byWorker = new Map<string, number>();
  const workers = () =>
    byWorker.size === 0 ? "" : ` | ${[...byWorker].map(([w, n]) => `${w} ${n}`).join(", ")}`;
  return {
    onEvent(e) {
      if (e.type === "start") {
        bar = multi.create(e.total, e.already_done, { failed: 0, in_flight: 0, tokens: 0, workers: "" });
        return;
      }
      if (e.type === "item_start" || e.type === "item_end" || e.type === "item_pending") {
        const c = e.counts;
        if (e.type === "item_end" && e.worker) byWorker.set(e.worker, (byWorker.get(e.worker) ?? 0) + 1);
        bar?.update(c.done, {
          failed: c.failed,
          in_flight: c.in_flight,
          tokens: c.tokens,
          workers: workers(),
        });
      }
      const line = note(e, verbose);
      if (line) multi.log(`${line}\n`);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      multi.update(); // writes the log lines still buffered
      multi.stop();
    },
  };
}

function lineProgress(stream: NodeJS.WriteStream, verbose: boolean): Progress {
  const write = (s: string) => stream.write(`${s}\n`);
  return {
    onEvent(e) {
      if (e.type === "start") {
        write(
          `batch ${e.run_id}: ${e.total} queries${e.resumed ? `, ${e.already_done} already done (resumed)` : ""}, ${e.to_run} to run`,
        );
        return;
      }
      if (e.type === "item_end") {
        const o = e.outcome;
        const c = e.counts;
        const correct = o.correct === null ? "" : o.correct ? " correct" : " not correct";
        write(
          `[${c.done}/${c.total}] ${o.key} ${o.status}${correct} ${(o.duration_ms / 1000).toFixed(1)} s ${o.tokens} tokens` +
            `${e.worker ? ` by ${e.worker}` : ""} (failed ${c.failed}, in flight ${c.in_flight}, ${c.tokens} tokens in all)`,
        );
        return;
      }
      if (verbose && e.type === "item_start") write(`start ${e.key}`);
      const line = note(e, verbose);
      if (line) write(line);
    },
    stop() {},
  };
}
