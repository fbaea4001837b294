// The page's entry: picks the view from the address's #fragment and swaps it when the fragment changes.
import { batchCompareView, batchListView, batchRunView, sessionView, sessionsView } from "./views.js";

const main = document.getElementById("main");
let teardown = () => {};

function route() {
  const [path, query = ""] = location.hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean);
  // In-page anchors (#step-3) scroll within the current session and are not routes.
  if (parts.length === 1 && /^(step|plan|snapshot)-\d+$/.test(parts[0])) return;
  teardown();
  const params = new URLSearchParams(query);
  let nav = "sessions";
  if (parts[0] === "s" && parts[1]) teardown = sessionView(main, decodeURIComponent(parts[1]));
  else if (parts[0] === "waiting") {
    nav = "waiting";
    teardown = sessionsView(main, params, { fixedStatus: "awaiting_human" });
  } else if (parts[0] === "batch" && parts[2] === "compare" && parts[3]) {
    nav = "batch";
    teardown = batchCompareView(main, decodeURIComponent(parts[1]), decodeURIComponent(parts[3]));
  } else if (parts[0] === "batch" && parts[1]) {
    nav = "batch";
    teardown = batchRunView(main, decodeURIComponent(parts[1]));
  } else if (parts[0] === "batch") {
    nav = "batch";
    teardown = batchListView(main);
  } else teardown = sessionsView(main, params);
  for (const a of document.querySelectorAll("[data-nav]"))
    a.classList.toggle("active", a.dataset.nav === nav);
}

// Links between timeline cards scroll to their target instead of changing the route.
document.addEventListener("click", (ev) => {
  const a = ev.target.closest("a.jump");
  if (!a) return;
  ev.preventDefault();
  const el = document.getElementById(a.dataset.target);
  if (el) {
    el.scrollIntoView({ behavior: "smooth", block: "start" });
    el.classList.add("flash");
    setTimeout(() => el.classList.remove("flash"), 1200);
  }
});

window.addEventListener("hashchange", route);
route();
