/**
 * A chart of per-tool success rate and latency for one or two runs, as an SVG written by hand (no
 * dependency); a PNG is made from it only when an SVG renderer (rsvg-convert) is installed.
 */
import { execFileSync } from "node:child_process";

export interface ChartTool {
  tool: string;
  /** Per run, in the order of `runs`; null when the tool was not used in that run. */
  values: Array<{
    success_rate: number;
    calls: number;
    succeeded: number;
    median_ms: number;
    p95_ms: number;
  } | null>;
}

/** A run's sessions: how many of how many succeeded, shown above the tools so the overall change comes first. */
export interface ChartTotals {
  succeeded: number;
  queries: number;
}

const COLORS = ["#4e79a7", "#f28e2b"];
/** The next round number (1, 2, 2.5, 5 × 10^k) at or above v, so the axis ticks read well. */
const niceCeil = (v: number) => {
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 2.5, 5, 10].map((m) => m * p).find((x) => x >= v) ?? v;
};
const tick = (v: number) => (v >= 10_000 ? `${Math.round(v / 1000)}k` : String(Math.round(v)));
const esc = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

export function renderChart(
  runs: string[],
  tools: ChartTool[],
  title: string,
  totals: ChartTotals[] = [],
): string {
  // "2/3" beside each rate, so a rate from a handful of calls reads as the small sample it is.
  const n = runs.length;
  const labelW = 200;
  const plotW = 300;
  const gap = 70;
  const barH = 10;
  const rowH = n * barH + 10;
  // The sessions' row (one bar per run) sits above the tools' rows.
  const totalsH = totals.length ? n * barH + 40 : 0;
  const top = 70 + totalsH;
  const width = labelW + plotW * 2 + gap + 90;
  const bottom = top + Math.max(1, tools.length) * rowH + 5;
  const height = bottom + 30;
  const maxMs = niceCeil(Math.max(1, ...tools.flatMap((t) => t.values.map((v) => (v ? v.p95_ms : 0)))));
  const x2 = labelW + plotW + gap;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="20" font-size="15" font-weight="bold">${esc(title)}</text>`,
  );
  runs.forEach((r, i) => {
    const x = 10 + i * 260;
    out.push(
      `<rect x="${x}" y="30" width="12" height="12" fill="${COLORS[i]}"/>`,
      `<text x="${x + 18}" y="40">${esc(r.length > 38 ? `…${r.slice(-37)}` : r)}</text>`,
    );
  });
  if (totals.length) {
    const change =
      totals.length > 1 ? totals.map((t) => t.succeeded).join(" → ") : String(totals[0]!.succeeded);
    out.push(
      `<text x="10" y="${70 - 8}" font-weight="bold">Sessions succeeded: ${change} (of ${totals.map((t) => t.queries).join(" / ")})</text>`,
    );
    totals.forEach((t, i) => {
      const y = 70 + i * barH;
      const rate = t.queries ? t.succeeded / t.queries : 0;
      const w = Math.max(0.5, rate * plotW);
      out.push(
        `<rect x="${labelW}" y="${y}" width="${w.toFixed(1)}" height="${barH - 2}" fill="${COLORS[i]}"/>`,
        `<text x="${labelW + w + 3}" y="${y + barH - 2}" font-size="9">${(rate * 100).toFixed(0)}% (${t.succeeded}/${t.queries})</text>`,
      );
    });
    out.push(
      `<text x="${labelW - 8}" y="${70 + (n * barH) / 2 + 4}" text-anchor="end" font-weight="bold">all sessions</text>`,
    );
  }
  out.push(
    `<text x="${labelW}" y="${top - 8}" font-weight="bold">Tool call success rate (%), calls succeeded/made</text>`,
    `<text x="${x2}" y="${top - 8}" font-weight="bold">Latency (ms): median, whisker to P95</text>`,
  );
  for (const [x, scale] of [
    [labelW, 100],
    [x2, maxMs],
  ] as const) {
    out.push(`<line x1="${x}" y1="${top}" x2="${x}" y2="${bottom}" stroke="#999"/>`);
    for (const f of [0, 0.25, 0.5, 0.75, 1]) {
      const gx = x + plotW * f;
      if (f > 0) out.push(`<line x1="${gx}" y1="${top}" x2="${gx}" y2="${bottom}" stroke="#eee"/>`);
      out.push(
        `<text x="${gx}" y="${bottom + 14}" font-size="10" fill="#666" text-anchor="middle">${tick(scale * f)}</text>`,
      );
    }
  }
  tools.forEach((t, row) => {
    const y0 = top + row * rowH + 5;
    out.push(
      `<text x="${labelW - 8}" y="${y0 + (n * barH) / 2 + 4}" text-anchor="end">${esc(t.tool.length > 28 ? `${t.tool.slice(0, 27)}…` : t.tool)}</text>`,
    );
    t.values.forEach((v, i) => {
      const y = y0 + i * barH;
      if (!v) {
        out.push(`<text x="${labelW + 4}" y="${y + barH - 1}" font-size="9" fill="#999">not used</text>`);
        return;
      }
      const ws = Math.max(0.5, v.success_rate * plotW);
      const wm = Math.max(0.5, (v.median_ms / maxMs) * plotW);
      const wp = (v.p95_ms / maxMs) * plotW;
      out.push(
        `<rect x="${labelW}" y="${y}" width="${ws.toFixed(1)}" height="${barH - 2}" fill="${COLORS[i]}"><title>${esc(`${runs[i]}: ${(v.success_rate * 100).toFixed(1)}%`)}</title></rect>`,
        `<text x="${labelW + ws + 3}" y="${y + barH - 2}" font-size="9">${(v.success_rate * 100).toFixed(0)}% (${v.succeeded}/${v.calls})</text>`,
        `<rect x="${x2}" y="${y}" width="${wm.toFixed(1)}" height="${barH - 2}" fill="${COLORS[i]}"><title>${esc(`${runs[i]}: median ${Math.round(v.median_ms)} ms, p95 ${Math.round(v.p95_ms)} ms`)}</title></rect>`,
        `<line x1="${x2 + wm}" y1="${y + (barH - 2) / 2}" x2="${x2 + wp}" y2="${y + (barH - 2) / 2}" stroke="${COLORS[i]}"/>`,
        `<line x1="${x2 + wp}" y1="${y}" x2="${x2 + wp}" y2="${y + barH - 2}" stroke="${COLORS[i]}"/>`,
        `<text x="${x2 + Math.max(wm, wp) + 3}" y="${y + barH - 2}" font-size="9">${Math.round(v.median_ms)} (p95 ${Math.round(v.p95_ms)})</text>`,
      );
    });
  });
  if (tools.length === 0) out.push(`<text x="${labelW}" y="${top + 20}" fill="#999">no tool calls</text>`);
  out.push(`</svg>`);
  return `${out.join("\n")}\n`;
}

/** SVG → PNG with rsvg-convert when it is installed; returns what happened, for the report to say. */
export function svgToPng(svgPath: string, pngPath: string): { ok: boolean; note: string } {
  try {
    execFileSync("rsvg-convert", ["-b", "white", "-o", pngPath, svgPath], { timeout: 20_000, stdio: "pipe" });
    return { ok: true, note: `PNG written by rsvg-convert` };
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === "ENOENT")
      return { ok: false, note: "no PNG: no SVG renderer found (install librsvg2-bin for rsvg-convert)" };
    return { ok: false, note: `no PNG: rsvg-convert failed (${(e as Error).message.split("\n")[0]})` };
  }
}
