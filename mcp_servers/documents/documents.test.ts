/**
 * The documents server: the SQLite FTS5 index on its own (incremental re-index by content hash), then the
 * real server process through the hub (search, read, PDF, HTML from a path and from a 127.0.0.1 URL that
 * PDA_WEB_ALLOW_PRIVATE allows; other private addresses and non-http schemes are refused).
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MultiMCP } from "../index.js";
import { DOCUMENTS_SERVER, failure, gone } from "../hub/tests/helpers.js";
import { makePdf } from "../testing/pdf.js";
import { SAMPLES_DIR } from "./server.js";
import { DocumentIndex } from "./store.js";

const tmp = mkdtempSync(join(tmpdir(), "pda-documents-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function freshFolder(name: string): string {
  const dir = join(tmp, name);
  cpSync(SAMPLES_DIR, dir, { recursive: true });
  return dir;
}

describe("document index", () => {
  it("indexes the samples and re-indexes only what changed", async () => {
    const root = freshFolder("incremental");
    const db = join(tmp, "incremental.db");
    let index = DocumentIndex.open(root, db);
    const first = await index.sync();
    expect(first.added.sort()).toEqual([
      "calculating_machines.html",
      "model_context_protocol.md",
      "orchard_report.pdf",
      "tabletop_robot_safety.txt",
    ]);
    expect(first.failed).toEqual([]);
    index.close();

    // A new process on the same file: nothing to do.
    index = DocumentIndex.open(root, db);
    expect(await index.sync()).toMatchObject({ added: [], updated: [], removed: [], unchanged: 4 });

    writeFileSync(
      join(root, "tabletop_robot_safety.txt"),
      "Tabletop robot notes\n\nThe gripper is now painted purple.\n",
    );
    unlinkSync(join(root, "model_context_protocol.md"));
    writeFileSync(join(root, "sub.md"), "# Nested\n\nA walrus in a subfolder.\n");
    writeFileSync(join(root, "broken.pdf"), "%PDF-1.4 this is not really a pdf");
    writeFileSync(join(root, "ignored.bin"), "binary");
    const second = await index.sync();
    expect(second).toMatchObject({
      added: ["sub.md"],
      updated: ["tabletop_robot_safety.txt"],
      removed: ["model_context_protocol.md"],
      unchanged: 2,
    });
    expect(second.failed.map((f) => f.path)).toEqual(["broken.pdf"]);
    expect(second.failed[0]!.error).toMatch(/not a readable PDF/);

    expect(index.search("purple gripper", 3)[0]).toMatchObject({ path: "tabletop_robot_safety.txt" });
    expect(index.search("Model Context Protocol transports", 5).map((h) => h.path)).not.toContain(
      "model_context_protocol.md",
    );
    expect(index.search("walrus", 3)).toEqual([expect.objectContaining({ path: "sub.md", title: "Nested" })]);
    expect(() => index.search("?!", 3)).toThrow(/no words/);
    index.close();
  });

  it("ranks the passage that matches best first and points at its offset", async () => {
    const index = DocumentIndex.open(freshFolder("rank"), ":memory:");
    await index.sync();
    const hits = index.search("Babbage difference engine", 5);
    expect(hits[0]!.path).toBe("calculating_machines.html");
    expect(hits[0]!.snippet).toMatch(/\*\*Babbage\*\*|\*\*Difference\*\*/);
    const doc = await index.document(hits[0]!.path);
    expect(doc.text.slice(hits[0]!.start)).toMatch(/Babbage/);
    await expect(index.read("../outside.md")).rejects.toThrow(/outside the document folder/);
    index.close();
  });

  it("resolves symbolic links before the containment check, for indexing and for reading", async () => {
    const secrets = join(tmp, "secrets");
    mkdirSync(secrets);
    writeFileSync(join(secrets, "secret.txt"), "Passwords\n\nThe vault code is aardvark-42.\n");
    writeFileSync(join(secrets, "secret.md"), "# Secret\n\nThe vault code is aardvark-42.\n");
    const root = freshFolder("links");
    symlinkSync(join(secrets, "secret.txt"), join(root, "leak.txt")); // a file link out
    symlinkSync(secrets, join(root, "linked")); // a folder link out
    mkdirSync(join(root, "sub"));
    symlinkSync("../../secrets", join(root, "sub", "up")); // a relative link out, one folder down
    symlinkSync("tabletop_robot_safety.txt", join(root, "alias.txt")); // a link that stays inside
    symlinkSync("loop", join(root, "loop.md")); // a link to itself
    // The root named through a link of its own: its real path is the folder, so inside stays inside.
    const rootLink = join(tmp, "links-root");
    symlinkSync(root, rootLink);

    const index = DocumentIndex.open(rootLink, ":memory:");
    const report = await index.sync();
    expect(report.failed.map((f) => f.path).sort()).toEqual(["leak.txt", "linked", "sub/up"]);
    expect(report.failed[0]!.error).toMatch(/symbolic link that leads outside/);
    expect(report.added).not.toContain("alias.txt");
    expect(index.search("aardvark vault", 5)).toEqual([]);

    const outside = /leads outside the document folder/;
    for (const path of [
      "leak.txt",
      "linked/secret.md",
      "sub/up/secret.md",
      join(rootLink, "linked", "secret.txt"), // absolute, through the root's link
      "linked/not_there.md", // a missing file under a link out: refused, not "no such document"
    ]) {
      await expect(index.document(path), path).rejects.toThrow(outside);
      await expect(index.read(path), path).rejects.toThrow(outside);
    }
    expect((await index.document("alias.txt")).text).toMatch(/^Tabletop robot/);
    expect((await index.document("sub/../tabletop_robot_safety.txt")).path).toBe("tabletop_robot_safety.txt");
    await expect(index.document("loop.md")).rejects.toThrow(/loop\.md: .*ELOOP|symbolic link/);
    await expect(index.document("missing.md")).rejects.toThrow(/missing\.md: no such document/);
    index.close();
  });
});

describe("documents server through the hub", () => {
  let hub: MultiMCP;
  let http: Server;
  let base: string;
  let root: string;

  beforeAll(async () => {
    root = freshFolder("served");
    writeFileSync(
      join(root, "long.pdf"),
      makePdf([["First page alpha"], ["Second page beta"], ["Third page gamma"]], "Three pages"),
    );
    http = createServer((req, res) => {
      if (req.url === "/page.html") {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        res.end(
          "<html><head><title>Fixture &amp; page</title></head><body><h2>Served</h2><p>From <b>127.0.0.1</b>.</p></body></html>",
        );
      } else {
        res.writeHead(404).end("missing");
      }
    });
    await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    hub = await MultiMCP.start({
      servers: [
        {
          id: "documents",
          command: process.execPath,
          args: [DOCUMENTS_SERVER, "--root", root, "--db", join(tmp, "served.db")],
          env: { PDA_WEB_ALLOW_PRIVATE: new URL(base).host },
        },
      ],
    });
  });

  afterAll(async () => {
    const pid = hub.status()[0]!.pid;
    await hub.close();
    http.close();
    expect(await gone([pid])).toEqual([]);
  });

  it("offers the four document tools (and reindex) with output schemas", () => {
    const names = hub.tools().map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining([
        "search_stored_documents",
        "read_document",
        "extract_pdf",
        "convert_html_to_markdown",
      ]),
    );
    expect(hub.tools().find((t) => t.name === "search_stored_documents")?.outputSchema).toBeDefined();
  });

  it("searches and reads passages", async () => {
    const found = (await hub.call("search_stored_documents", {
      query: "payload limit grams gripper",
      k: 2,
    })) as {
      results: { path: string; start: number }[];
    };
    expect(found.results[0]!.path).toBe("tabletop_robot_safety.txt");
    const read = (await hub.call("read_document", {
      path: found.results[0]!.path,
      start: 0,
      length: 60,
    })) as {
      text: string;
      end: number;
      total_chars: number;
    };
    expect(read.text).toHaveLength(60);
    expect(read.text.startsWith("Tabletop robot")).toBe(true);
    expect(read.total_chars).toBeGreaterThan(500);
    const tail = (await hub.call("read_document", {
      path: "tabletop_robot_safety.txt",
      start: read.total_chars - 10,
    })) as {
      text: string;
    };
    expect(tail.text).toHaveLength(10);
  });

  it("extracts PDF text page by page", async () => {
    const pdf = (await hub.call("extract_pdf", { path: "long.pdf" })) as {
      pages: number;
      title: string;
      text: string;
    };
    expect(pdf).toMatchObject({ pages: 3, title: "Three pages" });
    expect(pdf.text.split("\f").map((p) => p.trim())).toEqual([
      "First page alpha",
      "Second page beta",
      "Third page gamma",
    ]);
    const e = await failure(hub.call("extract_pdf", { path: "model_context_protocol.md" }));
    expect(e.message).toMatch(/not a \.pdf file/);
  });

  it("converts HTML from the folder and from a URL", async () => {
    const local = (await hub.call("convert_html_to_markdown", {
      path_or_url: "calculating_machines.html",
    })) as {
      markdown: string;
      title: string;
    };
    expect(local.title).toBe("A short history of calculating machines");
    expect(local.markdown).toMatch(/^# A short history/);
    expect(local.markdown).toMatch(/## Mechanical calculators/);
    expect(local.markdown).not.toMatch(/not part of the text|font-family/);
    const remote = await hub.call("convert_html_to_markdown", { path_or_url: `${base}/page.html` });
    expect(remote).toMatchObject({ title: "Fixture & page", markdown: "## Served\n\nFrom **127.0.0.1**." });
    const missing = await failure(hub.call("convert_html_to_markdown", { path_or_url: `${base}/nope.html` }));
    expect(missing.message).toMatch(/HTTP 404/);
    const port = new URL(base).port;
    const loopback = await failure(
      hub.call("convert_html_to_markdown", { path_or_url: `http://[::1]:${port}/page.html` }),
    );
    expect(loopback.message).toMatch(
      `::1 (loopback) is not a public address. To allow it, start this server with PDA_WEB_ALLOW_PRIVATE=[::1]:${port}`,
    );
    const metadata = await failure(
      hub.call("convert_html_to_markdown", { path_or_url: "http://169.254.169.254/latest/meta-data/" }),
    );
    expect(metadata.message).toMatch(/169\.254\.169\.254 \(link-local\) is not a public address/);
    const file = await failure(hub.call("convert_html_to_markdown", { path_or_url: "file:///etc/passwd" }));
    expect(file.message).toMatch(/only http and https URLs can be fetched, not file:/);
  });

  it("refuses paths outside the folder and explains missing documents", async () => {
    const outside = await failure(hub.call("read_document", { path: "/etc/passwd" }));
    expect(outside.code).toBe("TOOL_ERROR");
    expect(outside.message).toMatch(/outside the document folder/);
    const missing = await failure(hub.call("read_document", { path: "no_such.md" }));
    expect(missing.message).toMatch(/no such document/);
  });

  it("refuses every tool a symbolic link that leads out of the folder", async () => {
    const away = join(tmp, "away");
    mkdirSync(away);
    writeFileSync(join(away, "secret.md"), "# Away\n\nThe vault code is aardvark-42.\n");
    writeFileSync(
      join(away, "secret.html"),
      "<html><body><p>The vault code is aardvark-42.</p></body></html>",
    );
    writeFileSync(join(away, "secret.pdf"), makePdf([["The vault code is aardvark-42."]], "Away"));
    symlinkSync(join(away, "secret.md"), join(root, "leak.md"));
    symlinkSync(join(away, "secret.pdf"), join(root, "leak.pdf"));
    symlinkSync(away, join(root, "away"));
    const calls: [string, Record<string, string>][] = [
      ["read_document", { path: "leak.md" }],
      ["read_document", { path: "away/secret.md" }],
      ["extract_pdf", { path: "leak.pdf" }],
      ["extract_pdf", { path: "away/secret.pdf" }],
      ["convert_html_to_markdown", { path_or_url: "away/secret.html" }],
    ];
    for (const [tool, args] of calls) {
      const e = await failure(hub.call(tool, args));
      expect(e.message, `${tool} ${JSON.stringify(args)}`).toMatch(/leads outside the document folder/);
      expect(e.message).not.toMatch(/aardvark/);
    }
    const report = (await hub.call("reindex_documents", {})) as { failed: { path: string }[] };
    expect(report.failed.map((f) => f.path).sort()).toEqual(["away", "leak.md", "leak.pdf"]);
    const found = (await hub.call("search_stored_documents", { query: "aardvark vault" })) as {
      results: unknown[];
    };
    expect(found.results).toEqual([]);
  });

  it("picks up a new file on reindex_documents", async () => {
    writeFileSync(join(root, "late.md"), "# Late arrival\n\nThe zeppelin landed at noon.\n");
    const report = (await hub.call("reindex_documents", {})) as { added: string[]; unchanged: number };
    expect(report.added).toEqual(["late.md"]);
    const found = (await hub.call("search_stored_documents", { query: "zeppelin" })) as {
      results: { path: string }[];
    };
    expect(found.results.map((r) => r.path)).toEqual(["late.md"]);
  });
});
