// Building the page from data. Everything the store holds (model text, tool results) goes in as text nodes,
// never as HTML: h() has no way to set innerHTML. The one exception, highlighted(), takes highlight.js output,
// which highlight.js escapes itself.

/** An element: h("a", {href: "#/", class: "x"}, "text", child, [more children]). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** A code block from highlight.js's escaped output for JavaScript. */
export function highlighted(html) {
  const code = document.createElement("code");
  code.className = "hljs language-javascript";
  code.innerHTML = html;
  return h("pre", { class: "code" }, code);
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export async function getJson(url) {
  const r = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await r.json().catch(() => ({ error: `${r.status} ${r.statusText}` }));
  if (!r.ok) throw new Error(body.error ?? `${r.status} ${r.statusText}`);
  return body;
}

export const when = (iso) => (iso ? iso.replace("T", " ").slice(0, 19) : "—");
export const secs = (ms) => (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`);
export const num = (n) => Number(n ?? 0).toLocaleString("en-US");
export const usd = (n) => `$${Number(n ?? 0).toFixed(4)}`;

export function statusBadge(status) {
  return h("span", { class: `badge status-${status}` }, status.replace("_", " "));
}

/** A JSON value as readable text (strings as they are). */
export function asText(value) {
  if (value === undefined) return "";
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2);
}
