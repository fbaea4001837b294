/**
 * Web search against a configurable endpoint. Two kinds of endpoint are understood:
 *   searxng     GET {url}?q=...&format=json  → { results: [{ title, url, content }] }  (self-hostable)
 *   duckduckgo  GET {url}?q=...              → the HTML results page of html.duckduckgo.com
 */
import type { EgressPolicy } from "../common/egress.js";
import { fetchText, FetchError } from "../common/fetch.js";

export type SearchKind = "searxng" | "duckduckgo";

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

export interface SearchEndpoint {
  kind: SearchKind;
  url: string;
}

export const DEFAULT_ENDPOINT: SearchEndpoint = {
  kind: "duckduckgo",
  url: "https://html.duckduckgo.com/html/",
};

function stripTags(html: string): string {
  return html
    .replace(/<[^>]+>/g, "")
    .replace(/&amp;/g, "&")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#x27;|&#39;/g, "'")
    .replace(/&nbsp;/g, " ")
    .replace(/\s+/g, " ")
    .trim();
}

/** DuckDuckGo wraps result links in a redirect (`/l/?uddg=<encoded target>`); unwrap it. */
function unwrapDuckLink(href: string): string {
  const decoded = href.replace(/&amp;/g, "&");
  try {
    const u = new URL(decoded, "https://duckduckgo.com");
    const target = u.searchParams.get("uddg");
    return target ?? u.href;
  } catch {
    return decoded;
  }
}

export function parseDuckDuckGo(html: string): SearchResult[] {
  const results: SearchResult[] = [];
  const block =
    /<a[^>]*class="[^"]*result__a[^"]*"[^>]*href="([^"]+)"[^>]*>([\s\S]*?)<\/a>([\s\S]*?)(?=<a[^>]*class="[^"]*result__a|$)/g;
  for (const m of html.matchAll(block)) {
    const snippet = /class="[^"]*result__snippet[^"]*"[^>]*>([\s\S]*?)<\/(?:a|div|td)>/.exec(m[3] ?? "");
    results.push({
      title: stripTags(m[2]!),
      url: unwrapDuckLink(m[1]!),
      snippet: snippet ? stripTags(snippet[1]!) : "",
    });
  }
  return results;
}

export function parseSearxng(json: string): SearchResult[] {
  let data: { results?: { title?: string; url?: string; content?: string }[] };
  try {
    data = JSON.parse(json) as typeof data;
  } catch {
    throw new FetchError(
      "the search endpoint did not answer JSON (is it a SearXNG instance with format=json enabled?)",
    );
  }
  return (data.results ?? [])
    .filter((r) => typeof r.url === "string")
    .map((r) => ({ title: r.title ?? r.url!, url: r.url!, snippet: r.content ?? "" }));
}

export async function webSearch(
  endpoint: SearchEndpoint,
  query: string,
  maxResults: number,
  egress?: EgressPolicy,
): Promise<SearchResult[]> {
  const url = new URL(endpoint.url);
  url.searchParams.set("q", query);
  if (endpoint.kind === "searxng") url.searchParams.set("format", "json");
  const page = await fetchText(url.href, { egress, timeoutMs: 15_000 });
  const results = endpoint.kind === "searxng" ? parseSearxng(page.text) : parseDuckDuckGo(page.text);
  return results.slice(0, maxResults);
}
