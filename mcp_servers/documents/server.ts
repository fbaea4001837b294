#!/usr/bin/env node
/**
 * The bundled documents MCP server: searches, reads and converts the documents of one folder.
 *   node dist/mcp_servers/documents/server.js [--root DIR] [--db FILE] [--rescan-ms N] [--http HOST:PORT]
 * Root: --root, else PDA_DOCUMENTS_ROOT, else the bundled samples. Index: --db, else PDA_DOCUMENTS_DB, else a
 * file per root under the user's data folder. The folder is re-indexed (incrementally) at start, before a
 * search when the last scan is older than --rescan-ms (default 30 s), and on `reindex_documents`.
 * convert_html_to_markdown fetches public addresses only, unless PDA_WEB_ALLOW_PRIVATE allows more.
 */
// zod's settings first: they apply to the schemas the imports below build as they load.
import "../../core/zod-config.js";
import { createHash } from "node:crypto";
import { answer as answerWith } from "../common/answer.js";
import { mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import envPaths from "env-paths";
import { McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";
// Not core/index.js: that loads every core schema, and a server process should start lean (#16).
import { PACKAGE_ROOT } from "../../core/paths.js";
import { EgressPolicy, UrlRefused, egressFromEnv } from "../common/egress.js";
import { FetchError, fetchText } from "../common/fetch.js";
import { HtmlError, htmlToMarkdown } from "../common/html.js";
import { serveEras } from "../common/serve-eras.js";
import { lazyValidator } from "../common/validator.js";
import { ExtractError, extractPdf } from "./extract.js";
import { DocumentError, DocumentIndex } from "./store.js";

export const SAMPLES_DIR = join(PACKAGE_ROOT, "mcp_servers/documents/samples");
const MAX_OUTPUT_CHARS = 200_000;

export interface DocumentsOptions {
  rescanMs?: number;
  /** Which addresses convert_html_to_markdown may fetch from (default: public ones only). */
  egress?: EgressPolicy;
}

const EXPECTED = [DocumentError, ExtractError, FetchError, UrlRefused, HtmlError];
/** Expected failures become isError results with their message; anything else is a bug and propagates. */
const answer = <T extends Record<string, unknown>>(compute: () => Promise<T>) =>
  answerWith(EXPECTED, compute);

function cap(text: string): { text: string; truncated: boolean } {
  return text.length > MAX_OUTPUT_CHARS
    ? { text: text.slice(0, MAX_OUTPUT_CHARS), truncated: true }
    : { text, truncated: false };
}

export function createDocumentsServer(index: DocumentIndex, options: DocumentsOptions = {}): McpServer {
  const rescanMs = options.rescanMs ?? 30_000;
  const server = new McpServer(
    { name: "pda-documents", version: "0.1.0" },
    { jsonSchemaValidator: lazyValidator() },
  );
  const fresh = async () => {
    if (Date.now() - index.lastSync > rescanMs) await index.sync();
  };
  const readOnly = { readOnlyHint: true, openWorldHint: false } as const;

  server.registerTool(
    "search_stored_documents",
    {
      description:
        "Full-text search (bm25) over the stored documents (Markdown, text, HTML, PDF). Returns the best matching " +
        "passages with their document path, title, a snippet and `start` (pass path and start to read_document).",
      inputSchema: z.object({
        query: z.string().min(1).describe("words to search for"),
        k: z.number().int().min(1).max(50).default(5).describe("how many passages to return"),
      }),
      outputSchema: z.object({
        query: z.string(),
        results: z.array(
          z.object({
            path: z.string(),
            title: z.string(),
            start: z.number(),
            snippet: z.string(),
            score: z.number(),
          }),
        ),
      }),
      annotations: readOnly,
    },
    ({ query, k }) =>
      answer(async () => {
        await fresh();
        return { query, results: index.search(query, k) };
      }),
  );

  server.registerTool(
    "read_document",
    {
      description:
        "Read a stored document's text (PDF and HTML as extracted text), from character `start` for `length` " +
        "characters. Paths are relative to the document folder, as search_stored_documents returns them.",
      inputSchema: z.object({
        path: z.string().min(1).describe("document path, e.g. notes/plan.md"),
        start: z.number().int().min(0).default(0).describe("first character to return"),
        length: z.number().int().min(1).max(50_000).default(4000).describe("how many characters"),
      }),
      outputSchema: z.object({
        path: z.string(),
        title: z.string(),
        start: z.number(),
        end: z.number(),
        total_chars: z.number(),
        text: z.string(),
      }),
      annotations: readOnly,
    },
    ({ path, start, length }) =>
      answer(async () => {
        const doc = await index.document(path);
        const from = Math.min(start, doc.text.length);
        const end = Math.min(doc.text.length, from + length);
        return {
          path: doc.path,
          title: doc.title,
          start: from,
          end,
          total_chars: doc.text.length,
          text: doc.text.slice(from, end),
        };
      }),
  );

  server.registerTool(
    "extract_pdf",
    {
      description: "Extract the text of a PDF in the document folder, pages separated by a form feed line.",
      inputSchema: z.object({ path: z.string().min(1).describe("the PDF's path in the document folder") }),
      outputSchema: z.object({
        path: z.string(),
        title: z.string(),
        pages: z.number(),
        text: z.string(),
        truncated: z.boolean(),
      }),
      annotations: readOnly,
    },
    ({ path }) =>
      answer(async () => {
        if (!path.toLowerCase().endsWith(".pdf")) throw new DocumentError(`${path} is not a .pdf file`);
        const { bytes } = await index.read(path);
        const pdf = await extractPdf(bytes, path);
        return { path, title: pdf.title, pages: pdf.pages ?? 0, ...cap(pdf.text) };
      }),
  );

  server.registerTool(
    "convert_html_to_markdown",
    {
      description:
        "Convert an HTML document to Markdown: a path in the document folder, or an http(s) URL to fetch. " +
        "Scripts, styles and page chrome are dropped.",
      inputSchema: z.object({ path_or_url: z.string().min(1).describe("document path or http(s) URL") }),
      outputSchema: z.object({
        source: z.string(),
        title: z.string(),
        markdown: z.string(),
        truncated: z.boolean(),
      }),
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    ({ path_or_url }) =>
      answer(async () => {
        let html: string;
        let truncatedFetch = false;
        if (/^[a-z][a-z0-9+.-]*:\/\//i.test(path_or_url)) {
          const got = await fetchText(path_or_url, { egress: options.egress });
          html = got.text;
          truncatedFetch = got.truncated;
        } else {
          html = (await index.read(path_or_url)).bytes.toString("utf8");
        }
        const { title, markdown, truncated: cut } = await htmlToMarkdown(html);
        const capped = cap(markdown);
        return {
          source: path_or_url,
          title,
          markdown: capped.text,
          truncated: capped.truncated || truncatedFetch || cut,
        };
      }),
  );

  server.registerTool(
    "reindex_documents",
    {
      description: "Re-scan the document folder now; only files whose content changed are read again.",
      outputSchema: z.object({
        added: z.array(z.string()),
        updated: z.array(z.string()),
        removed: z.array(z.string()),
        unchanged: z.number(),
        failed: z.array(z.object({ path: z.string(), error: z.string() })),
        ms: z.number(),
      }),
    },
    () => answer(async () => ({ ...(await index.sync()) })),
  );
  return server;
}

function defaultDbFor(root: string): string {
  const id = createHash("sha256").update(root).digest("hex").slice(0, 12);
  return join(envPaths("pda", { suffix: "" }).data, `documents-${id}.db`);
}

/** What the server does when run as a program (also what its start-up snapshot runs: snapshot.ts). */
export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      root: { type: "string" },
      db: { type: "string" },
      "rescan-ms": { type: "string" },
      http: { type: "string" },
    },
    strict: false,
  });
  const egress = egressFromEnv("documents");
  const root = resolve(String(values.root ?? (process.env.PDA_DOCUMENTS_ROOT || undefined) ?? SAMPLES_DIR));
  const dbPath = String(values.db ?? (process.env.PDA_DOCUMENTS_DB || undefined) ?? defaultDbFor(root));
  if (dbPath !== ":memory:") mkdirSync(dirname(dbPath), { recursive: true });
  const index = DocumentIndex.open(root, dbPath);
  // Index in the background: a big folder must not hold up the MCP handshake; tools wait for this scan.
  void index.sync().then(
    (r) => {
      process.stderr.write(
        `documents: ${index.count()} documents in ${root} (${r.added.length} added, ${r.updated.length} updated, ${r.removed.length} removed, ${r.unchanged} unchanged) in ${r.ms} ms\n`,
      );
      for (const f of r.failed) process.stderr.write(`documents: cannot index ${f.path}: ${f.error}\n`);
    },
    (e: unknown) => process.stderr.write(`documents: indexing failed: ${(e as Error).message}\n`),
  );
  const rescanMs = values["rescan-ms"] !== undefined ? Number(values["rescan-ms"]) : undefined;
  await serveEras(() => createDocumentsServer(index, { rescanMs, egress }), argv, {
    onShutdown: () => index.close(),
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void main();
