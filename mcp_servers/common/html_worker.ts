/**
 * The HTML → Markdown conversion itself, run in a worker thread by html.ts so a hostile page (deep nesting
 * makes turndown quadratic) cannot hold up the server: html.ts ends the worker at its deadline.
 * Messages: in { id, html }, out { id, title, markdown } or { id, error }.
 */
import { parentPort } from "node:worker_threads";
import TurndownService from "turndown";

const turndown = new TurndownService({
  headingStyle: "atx",
  codeBlockStyle: "fenced",
  bulletListMarker: "-",
});
turndown.remove([
  "head",
  "title",
  "nav",
  "script",
  "style",
  "noscript",
  "iframe",
  "template",
  "svg",
  "canvas",
  "form",
  "button",
] as TurndownService.Filter);

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " " };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
    if (e[0] === "#") {
      const code = e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return Number.isFinite(code) ? String.fromCodePoint(code) : m;
    }
    return ENTITIES[e.toLowerCase()] ?? m;
  });
}

/**
 * The text of the first <title>…</title>, found by plain searches: the regex it replaces,
 * /<title[^>]*>([\s\S]*?)<\/title>/i, is quadratic on "<title<title<title…" and gives the same answer.
 */
function titleText(html: string): string {
  const open = html.search(/<title/i);
  const body = open === -1 ? -1 : html.indexOf(">", open);
  if (body === -1) return "";
  const close = /<\/title>/gi;
  close.lastIndex = body;
  const m = close.exec(html);
  return m ? html.slice(body + 1, m.index) : "";
}

function convert(html: string): { title: string; markdown: string } {
  const title = decodeEntities(titleText(html).replace(/\s+/g, " ").trim());
  const markdown = turndown
    .turndown(html)
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  return { title, markdown };
}

parentPort!.on("message", ({ id, html }: { id: number; html: string }) => {
  try {
    parentPort!.postMessage({ id, ...convert(html) });
  } catch (e) {
    const message = e instanceof RangeError ? "the HTML is nested too deeply" : (e as Error).message;
    parentPort!.postMessage({ id, error: message });
  }
});
