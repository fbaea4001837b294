#!/usr/bin/env node
/**
 * The bundled web MCP server: fetch a page as Markdown, and search the web through a configurable endpoint.
 *   node dist/mcp_servers/web/server.js [--search-url URL] [--search-kind searxng|duckduckgo]
 *       [--rate PER_SECOND] [--burst N] [--http HOST:PORT]
 * Environment: PDA_SEARCH_URL, PDA_SEARCH_KIND, PDA_WEB_ALLOW_PRIVATE. Requests are rate limited per host; a
 * URL refused by the address policy is refused before it takes from its host's limit.
 * Only public addresses are fetched unless PDA_WEB_ALLOW_PRIVATE allows more (common/egress.ts); the search
 * endpoint, chosen by whoever configured the server, is always allowed. Offline, every tool answers with an
 * error that says so (DNS failure, refused connection, timeout), never a hang.
 */
// zod's settings first: they apply to the schemas the imports below build as they load.
import "../../core/zod-config.js";
import { isIP } from "node:net";
import { fileURLToPath } from "node:url";
import { answer as answerWith } from "../common/answer.js";
import { parseArgs } from "node:util";
import { McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";
import { EgressPolicy, UrlRefused, egressFromEnv } from "../common/egress.js";
import { FetchError, fetchText, parseHttpUrl } from "../common/fetch.js";
import { HtmlError, htmlToMarkdown } from "../common/html.js";
import { serveEras } from "../common/serve-eras.js";
import { lazyValidator } from "../common/validator.js";
import { RateLimited, RateLimiter } from "./limiter.js";
import { DEFAULT_ENDPOINT, webSearch, type SearchEndpoint, type SearchKind } from "./search.js";

export interface WebOptions {
  endpoint?: SearchEndpoint;
  limiter?: RateLimiter;
  /** Which addresses fetch_url_as_markdown may reach (default: public ones only). */
  egress?: EgressPolicy;
}

const EXPECTED = [FetchError, UrlRefused, RateLimited, HtmlError];
/** Expected failures become isError results with their message; anything else is a bug and propagates. */
const answer = <T extends Record<string, unknown>>(compute: () => Promise<T>) =>
  answerWith(EXPECTED, compute);

const TEXTUAL = /^(text\/|application\/(json|xml|xhtml\+xml|ld\+json|javascript)|$)/i;

export function createWebServer(options: WebOptions = {}): McpServer {
  const endpoint = options.endpoint ?? DEFAULT_ENDPOINT;
  const limiter = options.limiter ?? new RateLimiter(1, 5);
  const egress = options.egress ?? EgressPolicy.PUBLIC_ONLY;
  const searchEgress = egress.allowing(new URL(endpoint.url));
  const server = new McpServer(
    { name: "pda-web", version: "0.1.0" },
    { jsonSchemaValidator: lazyValidator() },
  );

  server.registerTool(
    "fetch_url_as_markdown",
    {
      description:
        "Fetch a web page (http or https) and return its main text as Markdown, with the page title. " +
        "Plain text and JSON are returned as they are.",
      inputSchema: z.object({
        url: z.string().min(1).describe("the page's URL"),
        max_chars: z
          .number()
          .int()
          .min(100)
          .max(500_000)
          .default(50_000)
          .describe("cut the Markdown after this many characters"),
      }),
      outputSchema: z.object({
        url: z.string(),
        final_url: z.string(),
        title: z.string(),
        content_type: z.string(),
        markdown: z.string(),
        truncated: z.boolean(),
      }),
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    ({ url, max_chars }) =>
      answer(async () => {
        const parsed = parseHttpUrl(url);
        // A URL the policy refuses is refused before it can use up the host's rate limit.
        await refuseEarly(egress, parsed);
        await limiter.take(parsed.host);
        const page = await fetchText(parsed.href, { egress });
        const type = page.contentType.split(";")[0]!.trim();
        if (!TEXTUAL.test(type)) {
          throw new FetchError(
            `${page.finalUrl} is ${type}, not a text page; it cannot be shown as Markdown`,
          );
        }
        const isHtml = /html/i.test(type) || (!type && /<html|<body|<p[\s>]/i.test(page.text));
        const {
          title,
          markdown,
          truncated: cut,
        } = isHtml ? await htmlToMarkdown(page.text) : { title: "", markdown: page.text, truncated: false };
        const truncated = page.truncated || cut || markdown.length > max_chars;
        return {
          url: page.url,
          final_url: page.finalUrl,
          title,
          content_type: type,
          markdown: markdown.slice(0, max_chars),
          truncated,
        };
      }),
  );

  server.registerTool(
    "web_search",
    {
      description:
        "Search the web. Returns up to max_results results, each with title, url and a snippet; " +
        "use fetch_url_as_markdown to read one.",
      inputSchema: z.object({
        query: z.string().min(1).describe("what to search for"),
        max_results: z.number().int().min(1).max(25).default(5).describe("how many results"),
      }),
      outputSchema: z.object({
        query: z.string(),
        results: z.array(z.object({ title: z.string(), url: z.string(), snippet: z.string() })),
      }),
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    ({ query, max_results }) =>
      answer(async () => {
        await limiter.take(new URL(endpoint.url).host);
        return { query, results: await webSearch(endpoint, query, max_results, searchEgress) };
      }),
  );
  return server;
}

/**
 * Throws UrlRefused when the policy refuses `url`'s host (an IP literal, or any address its name resolves to).
 * The fetch checks again on the address it connects to (so a name is resolved twice); a name that does not
 * resolve is left for the fetch to report.
 */
function refuseEarly(egress: EgressPolicy, url: URL): Promise<void> {
  return new Promise((resolve, reject) => {
    const lookup = egress.lookupFor(url); // checks an IP literal here
    if (isIP(url.hostname.replace(/^\[|\]$/g, ""))) return resolve();
    lookup(url.hostname, { all: true }, (e) => (e instanceof UrlRefused ? reject(e) : resolve()));
  });
}

/** What the server does when run as a program (also what its start-up snapshot runs: snapshot.ts). */
export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      "search-url": { type: "string" },
      "search-kind": { type: "string" },
      rate: { type: "string" },
      burst: { type: "string" },
      http: { type: "string" },
    },
    strict: false,
  });
  const kind = String(
    values["search-kind"] ?? (process.env.PDA_SEARCH_KIND || undefined) ?? DEFAULT_ENDPOINT.kind,
  );
  if (kind !== "searxng" && kind !== "duckduckgo") {
    process.stderr.write(`web: --search-kind must be searxng or duckduckgo, not ${kind}\n`);
    process.exit(2);
  }
  const url = String(
    values["search-url"] ?? (process.env.PDA_SEARCH_URL || undefined) ?? DEFAULT_ENDPOINT.url,
  );
  if (!URL.canParse(url)) {
    process.stderr.write(`web: the search URL is not a URL: ${url}\n`);
    process.exit(2);
  }
  const rate = Number(values.rate ?? 1);
  const burst = Number(values.burst ?? 5);
  if (!(rate > 0) || !(burst >= 1)) {
    process.stderr.write("web: --rate must be > 0 and --burst >= 1\n");
    process.exit(2);
  }
  const limiter = new RateLimiter(rate, burst);
  const egress = egressFromEnv("web");
  await serveEras(
    () => createWebServer({ endpoint: { kind: kind as SearchKind, url }, limiter, egress }),
    argv,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void main();
