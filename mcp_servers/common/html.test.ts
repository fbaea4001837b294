/**
 * HTML → Markdown within its budget: generated hostile inputs (deep nesting of block, list and inline
 * elements, wide nesting, attribute and tag soup) each end with a result or a typed HtmlError, never a hang
 * or a crash; a conversion past its deadline is ended and the next one works; input past the size cap is cut
 * and says so. Outcomes are asserted, never times. Runs the worker built in dist/.
 */
import { describe, expect, it } from "vitest";
import { HtmlError, MAX_HTML_CHARS, htmlToMarkdown, type Markdown } from "./html.js";

const NORMAL =
  "<html><head><title>A &amp; B</title><script>x()</script></head><body><nav>menu</nav>" +
  "<h1>Heading</h1><ul><li>one</li><li>two <b>bold</b></li></ul><p>A <a href='/x'>link</a>.</p></body></html>";
const NORMAL_MD = "# Heading\n\n-   one\n-   two **bold**\n\nA [link](/x).";

const attrs = (n: number) => Array.from({ length: n }, (_, i) => `data-a${i}="${"v".repeat(16)}"`).join(" ");
const HOSTILE: Record<string, string> = {
  // 128 KB of nested lists took 15.8 s in the server; deeper nesting overflowed turndown's stack.
  "deep lists (128 KB)": "<ul><li>x".repeat(14_000),
  "deep lists, closed": "<ul><li>x".repeat(3_000) + "</li></ul>".repeat(3_000),
  "deep divs": "<div>".repeat(50_000) + "x" + "</div>".repeat(50_000),
  "deep inline": "<b><i>".repeat(40_000) + "x",
  "deep tables": "<table><tr><td>".repeat(5_000),
  "deep blockquotes": "<blockquote>".repeat(20_000) + "q",
  "wide nesting": "<div>" + "<ul><li><a href='/a'>a</a> <em>b</em></li></ul>".repeat(40_000) + "</div>",
  "attribute soup": `<p ${attrs(60_000)}>text</p>`,
  "unclosed tag soup": "<a <b <c <title <title ".repeat(200_000),
  "title soup": "<title".repeat(300_000),
};

/** The outcome of one conversion: its Markdown, or the typed error's code. */
async function outcome(html: string, deadlineMs: number): Promise<Markdown | HtmlError> {
  try {
    return await htmlToMarkdown(html, { deadlineMs });
  } catch (e) {
    if (e instanceof HtmlError) return e;
    throw e; // anything else is a defect
  }
}

describe("htmlToMarkdown", () => {
  it("converts a normal page as turndown always did", async () => {
    expect(await htmlToMarkdown(NORMAL)).toEqual({ title: "A & B", markdown: NORMAL_MD, truncated: false });
  });

  it.each(Object.entries(HOSTILE))("%s: ends with a result or a typed error", async (_, html) => {
    const got = await outcome(html, 2_000);
    if (got instanceof HtmlError) {
      expect(["HTML_TIMEOUT", "HTML_FAILED"]).toContain(got.code);
      expect(got.message).toMatch(/too complex to convert within 2000 ms|cannot convert the HTML/);
    } else {
      expect(typeof got.markdown).toBe("string");
      expect(got.truncated).toBe(html.length > MAX_HTML_CHARS);
    }
    // Whatever happened, the converter still works.
    expect((await htmlToMarkdown(NORMAL)).markdown).toBe(NORMAL_MD);
  });

  it("ends a conversion at its deadline with HTML_TIMEOUT and carries on with the next", async () => {
    const slow = htmlToMarkdown("<ul><li>x".repeat(14_000), { deadlineMs: 1 });
    const next = htmlToMarkdown(NORMAL); // queued behind it
    const e = await slow.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(HtmlError);
    expect(e).toMatchObject({ code: "HTML_TIMEOUT" });
    expect((e as Error).message).toMatch(
      /the HTML \(126000 characters\) is too complex to convert within 1 ms/,
    );
    expect((await next).markdown).toBe(NORMAL_MD);
  });

  it("times out a call still queued behind a slow one", async () => {
    const slow = htmlToMarkdown("<div>".repeat(50_000), { deadlineMs: 3_000 }).catch((e: unknown) => e);
    const queued = await outcome(NORMAL, 1);
    expect(queued).toBeInstanceOf(HtmlError);
    expect(queued).toMatchObject({ code: "HTML_TIMEOUT" });
    await slow;
    expect((await htmlToMarkdown(NORMAL)).markdown).toBe(NORMAL_MD);
  });

  it("finds the title as before, also in tag soup", async () => {
    expect((await htmlToMarkdown("<TITLE lang=en>A &amp;\n b</Title><title>second</title>")).title).toBe(
      "A & b",
    );
    expect((await htmlToMarkdown("<title>never closed <p>x</p>")).title).toBe("");
  });

  it("cuts input past the size cap and says so", async () => {
    const html = `<p>${"word ".repeat(MAX_HTML_CHARS / 5)}</p>`;
    const got = await htmlToMarkdown(html, { deadlineMs: 120_000 });
    expect(got.truncated).toBe(true);
    expect(got.markdown.startsWith("word word")).toBe(true);
    expect(got.markdown.length).toBeLessThanOrEqual(MAX_HTML_CHARS);
  });
});
