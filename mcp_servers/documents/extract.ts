/** Text out of the document kinds the index understands: Markdown, plain text, HTML and PDF. */
import { basename, extname } from "node:path";
import { htmlToMarkdown } from "../common/html.js";

export type DocumentKind = "markdown" | "text" | "html" | "pdf";

const KINDS: Record<string, DocumentKind> = {
  ".md": "markdown",
  ".markdown": "markdown",
  ".txt": "text",
  ".text": "text",
  ".html": "html",
  ".htm": "html",
  ".pdf": "pdf",
};

export function kindOf(path: string): DocumentKind | undefined {
  return KINDS[extname(path).toLowerCase()];
}

export interface Extracted {
  title: string;
  text: string;
  pages?: number;
}

export class ExtractError extends Error {}

/** Pages are separated by a blank line and a form feed, so offsets stay stable and pages stay visible. */
export async function extractPdf(bytes: Uint8Array, name: string): Promise<Extracted> {
  // Loaded at the first PDF, not at start: the server must answer initialize quickly (#16).
  const { extractText: pdfText, getDocumentProxy, getMeta } = await import("unpdf");
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    pdf = await getDocumentProxy(new Uint8Array(bytes));
  } catch (e) {
    throw new ExtractError(`${name} is not a readable PDF: ${(e as Error).message}`);
  }
  try {
    const { totalPages, text } = await pdfText(pdf, { mergePages: false });
    const meta = await getMeta(pdf).catch(() => undefined);
    const info = (meta?.info ?? {}) as { Title?: unknown };
    const title = typeof info.Title === "string" && info.Title.trim() ? info.Title.trim() : basename(name);
    return { title, text: text.map((p) => p.trim()).join("\n\n\f\n\n"), pages: totalPages };
  } finally {
    await pdf.destroy().catch(() => {});
  }
}

export async function extract(path: string, bytes: Uint8Array): Promise<Extracted> {
  const kind = kindOf(path);
  const utf8 = () => Buffer.from(bytes).toString("utf8");
  switch (kind) {
    case "pdf":
      return extractPdf(bytes, path);
    case "html": {
      // An HtmlError (too complex) fails this one file in the index report, like an unreadable PDF.
      const { title, markdown } = await htmlToMarkdown(utf8());
      return { title: title || basename(path), text: markdown };
    }
    case "markdown": {
      const text = utf8();
      const heading = /^#\s+(.+)$/m.exec(text);
      return { title: heading ? heading[1]!.trim() : basename(path), text };
    }
    case "text": {
      const text = utf8();
      const first = text.split("\n").find((l) => l.trim());
      return { title: first ? first.trim().slice(0, 120) : basename(path), text };
    }
    default:
      throw new ExtractError(`${basename(path)}: unsupported kind (known: ${Object.keys(KINDS).join(" ")})`);
  }
}

/** Split text into chunks of about `size` characters at paragraph, then line, then word boundaries. */
export function chunk(text: string, size = 900): { start: number; body: string }[] {
  const out: { start: number; body: string }[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + size);
    if (end < text.length) {
      const window = text.slice(start, end);
      const cut = Math.max(window.lastIndexOf("\n\n"), -1);
      const at =
        cut > size / 3
          ? cut
          : Math.max(window.lastIndexOf("\n"), window.lastIndexOf(". ") + 1, window.lastIndexOf(" "));
      if (at > size / 3) end = start + at;
    }
    const body = text.slice(start, end);
    if (body.trim()) out.push({ start, body });
    start = end;
  }
  return out;
}
