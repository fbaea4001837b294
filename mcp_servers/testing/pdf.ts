/**
 * A tiny PDF writer (Helvetica text lines, one or more pages, a Title) for fixtures and the bundled
 * sample: enough structure for real PDF readers, with correct xref offsets.
 */
export function makePdf(pages: string[][], title: string): Buffer {
  const objects: string[] = [];
  const add = (body: string) => objects.push(body);
  const escape = (t: string) => t.replace(/[\\()]/g, (c) => `\\${c}`);
  add(""); // 1: catalog, filled below
  add(""); // 2: page tree, filled below
  add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"); // 3
  const kids: number[] = [];
  for (const lines of pages) {
    const stream = `BT /F1 11 Tf 64 740 Td 15 TL ${lines.map((l) => `(${escape(l)}) Tj T*`).join(" ")} ET`;
    add(`<< /Length ${Buffer.byteLength(stream, "latin1")} >>\nstream\n${stream}\nendstream`);
    const content = objects.length;
    add(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${content} 0 R >>`,
    );
    kids.push(objects.length);
  }
  objects[0] = "<< /Type /Catalog /Pages 2 0 R >>";
  objects[1] = `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(" ")}] /Count ${kids.length} >>`;
  add(`<< /Title (${escape(title)}) /Producer (pda testing/pdf.ts) >>`);
  const info = objects.length;
  let out = "%PDF-1.4\n";
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out, "latin1"));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, "latin1");
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  out += offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("");
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Info ${info} 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, "latin1");
}
