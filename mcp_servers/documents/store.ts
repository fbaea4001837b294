/**
 * The document index: a SQLite file with the extracted text of every document under a root folder and
 * an FTS5 table of its chunks (bm25 ranking, porter stemming). Re-indexing is incremental: a file whose
 * content hash did not change is not read again; deleted files leave the index.
 */
import { createHash } from "node:crypto";
import { readdir } from "node:fs/promises";
import { join, relative, resolve, sep } from "node:path";
import Database from "better-sqlite3";
import { chunk, extract, kindOf, type DocumentKind } from "./extract.js";
import { DocumentError, locate, readInside, readLocated } from "./folder.js";

export { DocumentError };

const SCHEMA_VERSION = 1;
const MIGRATIONS: Record<number, string> = {
  1: `
    CREATE TABLE documents (
      path TEXT PRIMARY KEY,     -- relative to the root, with forward slashes
      hash TEXT NOT NULL,        -- sha256 of the file's bytes
      kind TEXT NOT NULL,
      title TEXT NOT NULL,
      text TEXT NOT NULL,        -- the extracted text read_document serves
      pages INTEGER,
      indexed_at TEXT NOT NULL
    );
    CREATE VIRTUAL TABLE chunks USING fts5(path UNINDEXED, start UNINDEXED, title, body, tokenize = 'porter unicode61');
  `,
};

export interface SyncReport {
  added: string[];
  updated: string[];
  removed: string[];
  unchanged: number;
  failed: { path: string; error: string }[];
  ms: number;
}

export interface SearchHit {
  path: string;
  title: string;
  /** Character offset of the matching chunk in the document's text (pass to read_document). */
  start: number;
  snippet: string;
  score: number;
}

export interface DocumentText {
  path: string;
  title: string;
  kind: DocumentKind;
  text: string;
  pages?: number;
}

const SKIP_DIRS = new Set(["node_modules", ".git", "dist"]);

export class DocumentIndex {
  private readonly db: Database.Database;
  private syncing?: Promise<SyncReport>;
  lastSync = 0;

  private constructor(
    readonly root: string,
    dbPath: string,
  ) {
    this.db = new Database(dbPath);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("busy_timeout = 5000");
    const version = this.db.pragma("user_version", { simple: true }) as number;
    if (version > SCHEMA_VERSION) {
      throw new DocumentError(`${dbPath} was written by a newer pda (schema ${version} > ${SCHEMA_VERSION})`);
    }
    for (let v = version + 1; v <= SCHEMA_VERSION; v++) {
      this.db.transaction(() => {
        this.db.exec(MIGRATIONS[v]!);
        this.db.pragma(`user_version = ${v}`);
      })();
    }
  }

  static open(root: string, dbPath: string): DocumentIndex {
    return new DocumentIndex(resolve(root), dbPath);
  }

  close(): void {
    this.db.close();
  }

  /**
   * The bytes of the file at `path` (relative to the root, or absolute), which must lie inside the root with
   * every symbolic link resolved. Throws DocumentError naming the path otherwise.
   */
  read(path: string): Promise<{ rel: string; bytes: Buffer }> {
    return readInside(this.root, path);
  }

  private relPath(abs: string): string {
    return relative(this.root, abs).split(sep).join("/");
  }

  private async walk(dir: string, out: string[], links: string[]): Promise<void> {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (e) {
      throw new DocumentError(`cannot read the document folder ${dir}: ${(e as Error).message}`);
    }
    for (const entry of entries) {
      if (entry.name.startsWith(".")) continue;
      const abs = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!SKIP_DIRS.has(entry.name)) await this.walk(abs, out, links);
      } else if (entry.isFile() && kindOf(entry.name)) out.push(abs);
      // Links are not walked: one that leads inside the folder reaches what is indexed under its own path
      // anyway, and one that leads outside must not be read (doSync reads through locate() all the same).
      else if (entry.isSymbolicLink()) links.push(abs);
    }
  }

  /** Bring the index in line with the folder. Concurrent callers share one run. */
  sync(): Promise<SyncReport> {
    this.syncing ??= this.doSync().finally(() => (this.syncing = undefined));
    return this.syncing;
  }

  private async doSync(): Promise<SyncReport> {
    const started = Date.now();
    const report: SyncReport = { added: [], updated: [], removed: [], unchanged: 0, failed: [], ms: 0 };
    const files: string[] = [];
    const links: string[] = [];
    await this.walk(this.root, files, links);
    for (const abs of links) {
      // Named in the report when it leads out, so a user who linked a folder in learns why it is missing.
      const outside = await locate(this.root, abs).then(
        () => false,
        (e: unknown) => e instanceof DocumentError,
      );
      if (outside) {
        report.failed.push({
          path: this.relPath(abs),
          error: "a symbolic link that leads outside the document folder; not indexed",
        });
      }
    }
    const known = new Map(
      (this.db.prepare("SELECT path, hash FROM documents").all() as { path: string; hash: string }[]).map(
        (r) => [r.path, r.hash],
      ),
    );
    const upsert = this.db.transaction((path: string, hash: string, doc: DocumentText) => {
      this.db.prepare("DELETE FROM chunks WHERE path = ?").run(path);
      this.db
        .prepare(
          `INSERT INTO documents (path, hash, kind, title, text, pages, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT(path) DO UPDATE SET hash = excluded.hash, kind = excluded.kind, title = excluded.title,
             text = excluded.text, pages = excluded.pages, indexed_at = excluded.indexed_at`,
        )
        .run(path, hash, doc.kind, doc.title, doc.text, doc.pages ?? null, new Date().toISOString());
      const insert = this.db.prepare("INSERT INTO chunks (path, start, title, body) VALUES (?, ?, ?, ?)");
      for (const c of chunk(doc.text)) insert.run(path, c.start, doc.title, c.body);
    });
    const seen = new Set<string>();
    for (const abs of files) {
      const path = this.relPath(abs);
      seen.add(path);
      try {
        const { bytes } = await this.read(abs);
        const hash = createHash("sha256").update(bytes).digest("hex");
        if (known.get(path) === hash) {
          report.unchanged++;
          continue;
        }
        const doc = await this.extractBytes(abs, bytes);
        upsert(path, hash, doc);
        (known.has(path) ? report.updated : report.added).push(path);
      } catch (e) {
        report.failed.push({ path, error: (e as Error).message });
      }
    }
    const remove = this.db.transaction((path: string) => {
      this.db.prepare("DELETE FROM chunks WHERE path = ?").run(path);
      this.db.prepare("DELETE FROM documents WHERE path = ?").run(path);
    });
    for (const path of known.keys()) {
      if (!seen.has(path)) {
        remove(path);
        report.removed.push(path);
      }
    }
    this.lastSync = Date.now();
    report.ms = this.lastSync - started;
    return report;
  }

  private async extractBytes(abs: string, bytes: Uint8Array): Promise<DocumentText> {
    const kind = kindOf(abs)!;
    const { title, text, pages } = await extract(abs, bytes);
    return { path: this.relPath(abs), title, kind, text, ...(pages !== undefined && { pages }) };
  }

  /** bm25-ranked chunks for the words of `query` (any word may match; more and rarer matches rank higher). */
  search(query: string, k: number): SearchHit[] {
    const words = query.match(/[\p{L}\p{N}_]+/gu) ?? [];
    if (words.length === 0) throw new DocumentError(`the query "${query}" has no words to search for`);
    const match = words.map((w) => `"${w}"`).join(" OR ");
    const rows = this.db
      .prepare(
        `SELECT path, start, title, snippet(chunks, 3, '**', '**', '…', 24) AS snippet, bm25(chunks, 0, 0, 2.0, 1.0) AS rank
         FROM chunks WHERE chunks MATCH ? ORDER BY rank LIMIT ?`,
      )
      .all(match, k) as { path: string; start: number; title: string; snippet: string; rank: number }[];
    return rows.map((r) => ({
      path: r.path,
      title: r.title,
      start: Number(r.start),
      snippet: r.snippet.replace(/\s+/g, " ").trim(),
      score: Math.round(-r.rank * 1000) / 1000,
    }));
  }

  /** A document's extracted text: from the index when present, else read and extracted now. */
  async document(path: string): Promise<DocumentText> {
    const { rel, real } = await locate(this.root, path);
    const row = this.db
      .prepare("SELECT path, title, kind, text, pages FROM documents WHERE path = ?")
      .get(rel) as
      { path: string; title: string; kind: DocumentKind; text: string; pages: number | null } | undefined;
    if (row)
      return {
        path: row.path,
        title: row.title,
        kind: row.kind,
        text: row.text,
        ...(row.pages !== null && { pages: row.pages }),
      };
    if (!kindOf(rel))
      throw new DocumentError(`${path}: not a document kind the index reads (.md .txt .html .pdf)`);
    const bytes = await readLocated(real, path);
    return this.extractBytes(join(this.root, rel), bytes);
  }

  count(): number {
    return (this.db.prepare("SELECT count(*) AS n FROM documents").get() as { n: number }).n;
  }
}
