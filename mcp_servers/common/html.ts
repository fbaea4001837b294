/** HTML to Markdown with turndown (which brings its own DOM for Node); page chrome and scripts dropped. */
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

export interface Markdown {
  title: string;
  markdown: string;
}

export function htmlToMarkdown(html: string): Markdown {
  const m = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html);
  const title = m ? decodeEntities(m[1]!.replace(/\s+/g, " ").trim()) : "";
  const markdown = turndown
    .turndown(html)
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  return { title, markdown };
}
