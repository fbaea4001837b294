/**
 * The front end: plain files in ui/public (ES modules and CSS, no build step) plus highlight.js's stylesheet,
 * read once at start. Only these names are served, so no path from a request reaches the file system.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { Context } from "hono";
import { PACKAGE_ROOT } from "../core/index.js";

const TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
};

export const PUBLIC_DIR = join(PACKAGE_ROOT, "ui", "public");
const PUBLIC_FILES = ["index.html", "app.js", "dom.js", "views.js", "style.css", "favicon.svg"];

export class StaticFiles {
  private readonly files = new Map<string, { body: string; type: string }>();

  constructor(dir = PUBLIC_DIR) {
    for (const name of PUBLIC_FILES) this.add(name, readFileSync(join(dir, name), "utf8"));
    const require = createRequire(import.meta.url);
    this.add("highlight.css", readFileSync(require.resolve("highlight.js/styles/github.css"), "utf8"));
  }

  private add(name: string, body: string): void {
    this.files.set(name, { body, type: TYPES[name.slice(name.lastIndexOf(".") + 1)] ?? "text/plain" });
  }

  respond(c: Context, name: string): Response {
    const f = this.files.get(name);
    if (!f) return c.json({ error: `no such file: ${name}` }, 404);
    c.header("Content-Type", f.type);
    return c.body(f.body);
  }
}
