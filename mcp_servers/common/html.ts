/**
 * HTML to Markdown (turndown; page chrome and scripts dropped) within a time and size budget. Hostile HTML
 * made turndown take 15.8 s for 128 KB of nested lists, and a stack overflow for deeper ones, so conversion
 * runs in a worker thread (html_worker.ts) that is ended at a deadline (20 s): the call then fails with HtmlError
 * (HTML_TIMEOUT) and the server stays free for other calls. The same turndown settings as before run in the
 * worker, so normal pages convert exactly as they did. Input past MAX_HTML_CHARS is cut (`truncated`).
 * The worker, and turndown with it, loads at the first conversion, not at server start (#16).
 */
import { Worker } from "node:worker_threads";
import { distPath } from "../../core/paths.js";

export interface Markdown {
  title: string;
  markdown: string;
  /** The input was longer than MAX_HTML_CHARS and only its start was converted. */
  truncated: boolean;
}

export interface HtmlOptions {
  /** How long the call may take, queued behind other conversions or running (default 20 s). */
  deadlineMs?: number;
}

/** As much as the web fetch reads (2 MB); a document file may be longer. */
export const MAX_HTML_CHARS = 2 * 1024 * 1024;
/** Under the web and documents tools' 30 s timeout, so the caller gets this error rather than a timeout. */
const DEADLINE_MS = 20_000;

/** A conversion that failed: HTML_TIMEOUT (past its deadline) or HTML_FAILED (e.g. nested too deeply). */
export class HtmlError extends Error {
  constructor(
    readonly code: "HTML_TIMEOUT" | "HTML_FAILED",
    message: string,
  ) {
    super(message);
  }
}

interface Job {
  id: number;
  html: string;
  deadlineMs: number;
  resolve: (m: { title: string; markdown: string }) => void;
  reject: (e: Error) => void;
}

type Reply = { id: number; title: string; markdown: string } | { id: number; error: string };

/**
 * One worker, one conversion at a time. Each call's deadline runs from the call, queued or not, so no call
 * outlives it (the tool timeouts are 30 s); at the deadline a queued job leaves the queue and a running one
 * has its worker ended (a new one starts for the next job).
 */
class Converter {
  private worker?: Worker;
  private readonly queue: Job[] = [];
  private running?: Job;
  private nextId = 0;

  run(html: string, deadlineMs: number): Promise<{ title: string; markdown: string }> {
    return new Promise((resolve, reject) => {
      const job: Job = { id: ++this.nextId, html, deadlineMs, resolve, reject };
      const timer = setTimeout(() => this.expire(job), deadlineMs);
      job.resolve = (m) => (clearTimeout(timer), resolve(m));
      job.reject = (e) => (clearTimeout(timer), reject(e));
      this.queue.push(job);
      this.pump();
    });
  }

  private expire(job: Job): void {
    const queued = this.queue.indexOf(job);
    if (queued !== -1) this.queue.splice(queued, 1);
    else if (this.running === job) {
      void this.worker?.terminate();
      this.worker = undefined;
      this.running = undefined;
    } else return;
    job.reject(
      new HtmlError(
        "HTML_TIMEOUT",
        `the HTML (${job.html.length} characters) is too complex to convert within ${job.deadlineMs} ms ` +
          "(deeply nested elements?)",
      ),
    );
    this.pump();
  }

  private spawn(): Worker {
    // From dist/ also under vitest, which runs the .ts sources: a worker needs JavaScript.
    const worker = new Worker(distPath("mcp_servers/common/html_worker.js"));
    worker.unref(); // an idle converter must not keep the server alive
    worker.on("message", (reply: Reply) => {
      const job = this.running;
      if (worker !== this.worker || !job || reply.id !== job.id) return;
      this.running = undefined;
      if ("error" in reply)
        job.reject(new HtmlError("HTML_FAILED", `cannot convert the HTML: ${reply.error}`));
      else job.resolve({ title: reply.title, markdown: reply.markdown });
      this.pump();
    });
    worker.on("error", (e) => {
      if (worker !== this.worker) return;
      const job = this.running;
      this.worker = undefined;
      this.running = undefined;
      job?.reject(new HtmlError("HTML_FAILED", `cannot convert the HTML: ${e.message}`));
      this.pump();
    });
    return worker;
  }

  private pump(): void {
    if (this.running) return;
    const job = this.queue.shift();
    if (!job) return;
    this.running = job;
    (this.worker ??= this.spawn()).postMessage({ id: job.id, html: job.html });
  }
}

let converter: Converter | undefined;

/** The page's title and its Markdown; throws HtmlError when the HTML cannot be converted within the budget. */
export async function htmlToMarkdown(html: string, options: HtmlOptions = {}): Promise<Markdown> {
  const truncated = html.length > MAX_HTML_CHARS;
  const input = truncated ? html.slice(0, MAX_HTML_CHARS) : html;
  converter ??= new Converter();
  return { ...(await converter.run(input, options.deadlineMs ?? DEADLINE_MS)), truncated };
}
