// The pages: sessions list, one session, batch runs. Each view renders into `main` and returns a function
// that tears down what it opened (live event streams).
import { asText, clear, getJson, h, highlighted, num, secs, statusBadge, usd, when } from "./dom.js";

const STATUSES = [
  "running",
  "awaiting_human",
  "succeeded",
  "failed",
  "aborted",
  "budget_exhausted",
  "interrupted",
];
const DAY_MS = 86_400_000;
/** Statuses whose page follows the session live: it may still change (a waiting one, once answered). */
const FOLLOWED = new Set(["running", "awaiting_human"]);

function errorBox(e) {
  return h("p", { class: "error" }, String(e.message ?? e));
}

function setLive(on) {
  document.getElementById("live").hidden = !on;
}

// ---- sessions ----

function sessionRow(s) {
  return h(
    "tr",
    { dataset: { id: s.session_id } },
    h("td", {}, statusBadge(s.status)),
    h(
      "td",
      { class: "query" },
      h("a", { href: `#/s/${s.session_id}` }, s.original_query),
      s.final_answer ? h("div", { class: "answer" }, "→ ", s.final_answer) : null,
      s.status_reason && s.status !== "succeeded" ? h("div", { class: "reason" }, s.status_reason) : null,
    ),
    h(
      "td",
      { class: "agent" },
      s.agent ?? "",
      s.parent_session_id ? h("div", { class: "muted" }, "sub-agent") : null,
    ),
    h("td", { class: "when" }, when(s.created_at)),
    h("td", { class: "n" }, num(s.steps)),
    h("td", { class: "n" }, num(s.tokens)),
    h("td", { class: "n" }, secs(s.duration_ms)),
  );
}

export function sessionsView(main, params, { fixedStatus } = {}) {
  const state = Object.fromEntries(params);
  if (fixedStatus) state.status = fixedStatus;
  const body = h("tbody");
  const more = h("button", { class: "more", hidden: true }, "Load more");
  const count = h("span", { class: "muted count" });
  let next = null;
  let pages = 0;
  let shown = 0;

  const query = (after) => {
    const p = new URLSearchParams();
    for (const k of ["q", "status", "agent", "run", "since", "until"]) if (state[k]) p.set(k, state[k]);
    if (state.until) p.set("until", new Date(Date.parse(state.until) + DAY_MS).toISOString().slice(0, 10));
    if (after) p.set("after", after);
    return `/api/sessions?${p}`;
  };
  const load = async (after) => {
    try {
      const page = await getJson(query(after));
      if (!after) {
        body.replaceChildren();
        shown = 0;
        pages = 0;
      }
      pages++;
      shown += page.items.length;
      body.append(...page.items.map(sessionRow));
      next = page.next;
      more.hidden = !next;
      count.textContent = shown === 0 ? "no sessions match" : `${num(shown)}${next ? "+" : ""} sessions`;
    } catch (e) {
      body.replaceChildren(h("tr", {}, h("td", { colspan: 7 }, errorBox(e))));
    }
  };
  more.addEventListener("click", () => load(next));

  const field = (name, el) => {
    el.name = name;
    el.value = state[name] ?? "";
    return el;
  };
  const runs = field(
    "run",
    h("select", { "aria-label": "batch run" }, h("option", { value: "" }, "any batch run")),
  );
  getJson("/api/batch")
    .then((list) => {
      runs.append(...list.map((r) => h("option", { value: r.id }, `${r.id} (${r.items})`)));
      runs.value = state.run ?? "";
    })
    .catch(() => {});
  const form = h(
    "form",
    { class: "filters", role: "search" },
    field(
      "q",
      h("input", {
        type: "search",
        placeholder: "Search queries, answers, summaries…",
        "aria-label": "search",
      }),
    ),
    fixedStatus
      ? null
      : field(
          "status",
          h(
            "select",
            { "aria-label": "status" },
            h("option", { value: "" }, "any status"),
            STATUSES.map((s) => h("option", { value: s }, s.replace("_", " "))),
          ),
        ),
    field("agent", h("input", { type: "text", placeholder: "agent", "aria-label": "agent", size: 10 })),
    runs,
    h("label", {}, "from ", field("since", h("input", { type: "date" }))),
    h("label", {}, "to ", field("until", h("input", { type: "date" }))),
    h("button", { type: "submit" }, "Filter"),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v) p.set(k, v);
    location.hash = `${fixedStatus ? "#/waiting" : "#/"}${p.size ? `?${p}` : ""}`;
  });

  clear(
    main,
    h("div", { class: "heading" }, h("h1", {}, fixedStatus ? "Waiting on a human" : "Sessions"), count),
    form,
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { class: "sessions" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Status", "Query", "Agent", "Started", "Steps", "Tokens", "Time"].map((t) => h("th", {}, t)),
          ),
        ),
        body,
      ),
    ),
    more,
  );
  load();

  // While only the first page is shown, new and changed sessions appear as runs write them.
  const events = new EventSource("/api/live");
  let pending = false;
  events.addEventListener("changed", () => {
    if (pages > 1 || pending) return;
    pending = true;
    load().finally(() => (pending = false));
  });
  events.onopen = () => setLive(true);
  events.onerror = () => setLive(false);
  return () => {
    events.close();
    setLive(false);
  };
}

// ---- replaying a session ----

async function postJson(url, body) {
  const r = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const out = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(out.error ?? `${r.status} ${r.statusText}`);
  return out;
}

/** What the replay of this session found: the replayed session (live while it runs) and the steps that differ. */
function replayPanel(page, onStarted) {
  const id = page.session.session_id;
  const r = page.replay;
  const running = r?.state === "running";
  const status = h("p", { class: "muted", role: "status" });
  const profile = h("input", {
    name: "profile",
    placeholder: "profile (optional)",
    title: "the profile the session ran under, when several run its agent",
    "aria-label": "profile the session ran under",
  });
  const start = async (ev) => {
    ev.preventDefault();
    button.disabled = true;
    status.textContent = "Starting pda replay…";
    try {
      await postJson(
        `/api/sessions/${id}/replay`,
        profile.value.trim() ? { profile: profile.value.trim() } : {},
      );
      onStarted();
    } catch (e) {
      status.textContent = "";
      status.append(errorBox(e));
      button.disabled = false;
    }
  };
  const button = h("button", { type: "submit" }, r ? "Replay again" : "Replay this session");
  const form =
    page.can_replay && !running && !FOLLOWED.has(page.session.status)
      ? h("form", { class: "replay-form filters", onsubmit: start }, button, profile)
      : null;
  if (!r && !form) return null;
  const link = r ? h("a", { href: `#/s/${r.session_id}` }, r.session_id.slice(0, 8)) : null;
  const report = r?.report;
  return h(
    "section",
    { class: "replay" },
    h("div", { class: "label" }, "Replay"),
    h(
      "p",
      { class: "muted" },
      "Runs this session again from its logged model outputs against the live tools (pda replay), and shows which steps differ.",
    ),
    running ? h("p", {}, "Replaying as ", link, "… (follow it live there)") : null,
    r?.state === "failed" ? h("p", { class: "err" }, r.message) : null,
    report
      ? [
          h(
            "p",
            {
              class: `replay-verdict ${report.same_answer && report.differences.length === 0 ? "same" : "differs"}`,
            },
            "Replayed as ",
            link,
            ": ",
            report.same_answer ? "same final answer" : "the final answer differs",
            report.differences.length
              ? `; ${report.differences.length} step${report.differences.length > 1 ? "s differ" : " differs"}`
              : "; every step alike",
            report.sub_agents.length ? `; ${report.sub_agents.length} sub-agent sessions compared` : "",
          ),
          report.differences.length
            ? h(
                "div",
                { class: "table-wrap" },
                h(
                  "table",
                  { class: "differences" },
                  h(
                    "thead",
                    {},
                    h(
                      "tr",
                      {},
                      ["Step", "Description", "Logged", "Replayed"].map((t) => h("th", {}, t)),
                    ),
                  ),
                  h(
                    "tbody",
                    {},
                    report.differences.map((d) =>
                      h(
                        "tr",
                        {},
                        h(
                          "td",
                          {},
                          h(
                            "a",
                            { class: "jump", href: `#step-${d.step}`, "data-target": `step-${d.step}` },
                            `step ${d.step}`,
                          ),
                        ),
                        h("td", {}, d.description),
                        h("td", {}, h("pre", { class: "value" }, asText(d.logged))),
                        h("td", {}, h("pre", { class: "value" }, asText(d.replayed))),
                      ),
                    ),
                  ),
                ),
              )
            : null,
        ]
      : null,
    form,
    status,
  );
}

// ---- answering a question ----

async function postAnswer(id, kind, entry) {
  const r = await fetch(`/api/sessions/${id}/answer`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ kind, entry }),
  });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error ?? `${r.status} ${r.statusText}`);
  return body;
}

/** The tool call a question is about, with its arguments. */
function callBox(q) {
  return h(
    "pre",
    { class: "value" },
    `${q.server ? `${q.server}.` : ""}${q.tool}(${JSON.stringify(q.args, null, 2)})`,
  );
}

/** A typed result: JSON when it parses, else the text as it is. */
function parseLoose(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A form for the question the session waits on; each button sends one scripted-answers entry. */
function answerForm(id, q) {
  const status = h("p", { class: "muted", role: "status" });
  const buttons = [];
  const send = (entry) => async (ev) => {
    ev.preventDefault();
    for (const b of buttons) b.disabled = true;
    status.textContent = "Sending…";
    try {
      await postAnswer(id, q.kind, entry());
      status.textContent = "Answered: the session goes on (pda resume) and this page follows it.";
    } catch (e) {
      status.textContent = "";
      status.append(errorBox(e));
      for (const b of buttons) b.disabled = false;
    }
  };
  const button = (label, entry, cls = "") => {
    const b = h("button", { type: "button", class: cls, onclick: send(entry) }, label);
    buttons.push(b);
    return b;
  };
  // A result typed in (JSON when it parses, else the text) as a give_result answer.
  const giveResult = (label, name, placeholder) => {
    const value = h("textarea", {
      name: "value",
      rows: 2,
      class: "mono",
      "aria-label": name,
      placeholder,
    });
    return [
      h("div", { class: "label" }, label),
      value,
      h(
        "div",
        { class: "actions" },
        button("Use this result", () => ({ choice: "give_result", value: parseLoose(value.value) })),
      ),
    ];
  };
  const abort = () =>
    button("Abort the session", () => ({ choice: "abort", reason: "aborted in pda ui" }), "secondary");
  let body;
  if (q.kind === "clarification") {
    const text = h("textarea", { name: "answer", rows: 3, "aria-label": "your answer" });
    body = [
      q.context ? h("p", { class: "muted" }, q.context) : null,
      text,
      h(
        "div",
        { class: "actions" },
        button("Answer", () => ({ choice: "answer", text: text.value })),
        abort(),
      ),
    ];
  } else if (q.kind === "tool_failure") {
    const code = h("textarea", { name: "code", rows: 6, class: "mono", "aria-label": "code" });
    code.value = q.code ?? "";
    body = [
      h("p", { class: "err" }, h("strong", {}, q.error?.code ?? "error"), " ", q.error?.message ?? ""),
      h(
        "div",
        { class: "actions" },
        button("Retry the step", () => ({ choice: "retry" })),
        button("Skip it", () => ({ choice: "skip" })),
        abort(),
      ),
      h("div", { class: "label" }, "Edit the code and run it"),
      code,
      h(
        "div",
        { class: "actions" },
        button("Run this code", () => ({ choice: "edit_code", code: code.value })),
      ),
      giveResult("Or give the result yourself", "result", "the step's result (JSON or text)"),
    ];
  } else if (q.kind === "approval") {
    body = [
      callBox(q),
      h(
        "div",
        { class: "actions" },
        button("Allow once", () => ({ choice: "allow_once" })),
        button("Always allow", () => ({ choice: "allow_always" })),
        button("Deny", () => ({ choice: "deny" }), "secondary"),
        abort(),
      ),
    ];
  } else if (q.kind === "in_doubt") {
    body = [
      callBox(q),
      h(
        "p",
        { class: "muted" },
        q.happened
          ? "It happened before pda stopped, but its result was not kept (too large, or a secret the store redacted)."
          : "It was sent before pda stopped and no answer came back: it may or may not have happened. Check, then choose.",
      ),
      h(
        "div",
        { class: "actions" },
        button("Make it again", () => ({ choice: "repeat" })),
        button("Skip it", () => ({ choice: "skip" })),
        button("Fail the step", () => ({ choice: "fail_step" }), "secondary"),
        abort(),
      ),
      giveResult("Or give the result it had", "its result", "the result it had (JSON or text)"),
    ];
  } else if (q.kind === "elicitation") {
    const props = q.requestedSchema?.properties ?? {};
    const inputs = Object.entries(props).map(([name, p]) => {
      const input = p.enum
        ? h(
            "select",
            { name },
            p.enum.map((v) => h("option", { value: v }, v)),
          )
        : h("input", {
            name,
            type:
              p.type === "boolean"
                ? "checkbox"
                : p.type === "number" || p.type === "integer"
                  ? "number"
                  : "text",
          });
      return [name, p, h("label", { class: "field" }, h("span", {}, p.title ?? name), input)];
    });
    const content = () => {
      const out = {};
      for (const [name, p, label] of inputs) {
        const el = label.querySelector("input, select");
        if (p.type === "boolean") out[name] = el.checked;
        else if (el.value !== "")
          out[name] = p.type === "number" || p.type === "integer" ? Number(el.value) : el.value;
      }
      return out;
    };
    body = [
      h("p", {}, q.message),
      inputs.map(([, , label]) => label),
      h(
        "div",
        { class: "actions" },
        button("Send", () => ({ action: "accept", content: content() })),
        button("Decline", () => ({ action: "decline" }), "secondary"),
        button("Cancel", () => ({ action: "cancel" }), "secondary"),
      ),
    ];
  } else {
    body = [
      h(
        "div",
        { class: "actions" },
        button("Continue", () => ({ choice: "continue" })),
        abort(),
      ),
    ];
  }
  return h(
    "form",
    { class: "answer-form", onsubmit: (ev) => ev.preventDefault() },
    h("div", { class: "label" }, `Answer here (${q.kind.replace("_", " ")})`),
    body,
    status,
  );
}

// ---- one session ----

function totals(page) {
  const u = page.usage;
  const s = page.session;
  const item = (label, value) =>
    h("div", { class: "total" }, h("div", { class: "label" }, label), h("div", { class: "value" }, value));
  return h(
    "div",
    { class: "totals" },
    item("Steps", num(s.steps)),
    item("Model calls", num(u.llm_calls)),
    item("Tokens", `${num(u.tokens)}`),
    item("Cost", usd(u.cost_usd)),
    item("Tool calls", num(u.tool_calls)),
    item("Time", secs(u.ms)),
  );
}

const triggerLink = (t) => {
  const m = /^(snapshot|step):(\d+)$/.exec(t ?? "");
  return m
    ? h(
        "a",
        { href: `#${m[1]}-${m[2]}`, class: "jump", dataset: { target: `${m[1]}-${m[2]}` } },
        `${m[1]} ${m[2]}`,
      )
    : t || "—";
};

function snapshotCard(e) {
  const r = e.snapshot;
  const s = r.snapshot;
  const flag = (ok, label) => h("span", { class: `flag ${ok ? "yes" : "no"}` }, ok ? "✓ " : "… ", label);
  return h(
    "section",
    { class: "card snapshot", id: `snapshot-${r.index}` },
    h(
      "header",
      {},
      h("span", { class: "kind" }, "Perception"),
      h(
        "span",
        { class: "title" },
        `snapshot ${r.index} · ${r.snapshot_type.replace("_", " ")}`,
        r.step_index !== undefined ? ` · after step ${r.step_index}` : "",
      ),
      flag(s.original_goal_achieved, "goal"),
      r.snapshot_type === "user_query" ? null : flag(s.local_goal_achieved, "step"),
      h(
        "span",
        { class: "conf", title: "confidence" },
        h("meter", { min: 0, max: 1, value: s.confidence }),
        ` ${s.confidence.toFixed(2)}`,
      ),
      h("time", {}, when(e.at)),
    ),
    h("p", {}, s.reasoning),
    s.local_reasoning && s.local_reasoning !== "-" ? h("p", { class: "muted" }, s.local_reasoning) : null,
    h(
      "dl",
      {},
      h("dt", {}, "Needs"),
      h("dd", {}, s.result_requirement),
      h("dt", {}, "So far"),
      h("dd", {}, s.solution_summary),
    ),
  );
}

function planCard(e) {
  const p = e.plan;
  return h(
    "section",
    { class: "card plan", id: `plan-${p.version}` },
    h(
      "header",
      {},
      h("span", { class: "kind" }, "Plan"),
      h("span", { class: "title" }, `version ${p.version}`),
      h("span", { class: "tag" }, p.reason.replaceAll("_", " ")),
      h("span", { class: "muted" }, "triggered by ", triggerLink(p.triggered_by)),
      h("time", {}, when(e.at)),
    ),
    h(
      "pre",
      { class: "diff" },
      e.diff.map((d) =>
        h("div", { class: d.op === "+" ? "add" : d.op === "-" ? "del" : "same" }, `${d.op} ${d.text}`),
      ),
    ),
  );
}

/** A JSON text from the store, pretty-printed when it parses. */
function jsonText(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/**
 * A call's row, and its arguments and result (kept since the store logs them) in a row under it that the
 * tool's name unfolds.
 */
function callRows(c) {
  // How a durable step's call got its outcome when it was not simply made, and who decided one in doubt.
  const marks = [
    c.state && c.state !== "done" ? c.state.replace("_", " ") : null,
    c.decided_by ? `decided by ${c.decided_by}` : null,
  ].filter(Boolean);
  const state = marks.length ? h("span", { class: "muted call-state" }, ` · ${marks.join(" · ")}`) : null;
  const hasDetail = c.args_json !== undefined || c.result_json !== undefined;
  const detail = hasDetail
    ? h(
        "tr",
        { class: "call-detail", hidden: true },
        h(
          "td",
          { colspan: 5 },
          c.args_json !== undefined
            ? [h("div", { class: "label" }, "Arguments"), h("pre", { class: "value" }, jsonText(c.args_json))]
            : null,
          c.result_json !== undefined
            ? [h("div", { class: "label" }, "Result"), h("pre", { class: "value" }, jsonText(c.result_json))]
            : null,
        ),
      )
    : null;
  const tool = hasDetail
    ? h(
        "button",
        {
          class: "link call-toggle",
          title: "arguments and result",
          "aria-expanded": "false",
          onclick: (ev) => {
            detail.hidden = !detail.hidden;
            ev.currentTarget.setAttribute("aria-expanded", String(!detail.hidden));
          },
        },
        c.tool,
      )
    : c.tool;
  return [
    h(
      "tr",
      { class: c.ok ? "ok" : "bad" },
      h("td", {}, c.server),
      h("td", {}, tool, state),
      h("td", {}, c.ok ? "ok" : `${c.error_kind ?? "error"}${c.error_message ? `: ${c.error_message}` : ""}`),
      h("td", { class: "n" }, secs(c.latency_ms)),
      h("td", { class: "n" }, num(c.bytes)),
    ),
    detail,
  ];
}

/** One side of a robot step: the scene drawn from the logged calls (loaded when scrolled to), or why not. */
function renderFigure(label, ref) {
  const caption = h("figcaption", {}, label);
  if (!ref.src) return h("figure", { class: "render none" }, caption, h("p", { class: "muted" }, ref.reason));
  const img = h("img", {
    src: ref.src,
    alt: `the scene ${label.toLowerCase()} this step`,
    loading: "lazy",
    width: 480,
    height: 399,
  });
  const figure = h("figure", { class: "render" }, caption, img);
  // An image that cannot be made answers with JSON saying why: show that instead.
  img.addEventListener("error", async () => {
    let why = "the render could not be made";
    try {
      await getJson(ref.src);
    } catch (e) {
      why = e.message;
    }
    img.replaceWith(h("p", { class: "err" }, why));
  });
  return figure;
}

function robotRenders(r) {
  if (!r) return null;
  return h("div", { class: "renders" }, renderFigure("Before", r.before), renderFigure("After", r.after));
}

function toolTable(calls) {
  if (!calls.length) return null;
  return h(
    "table",
    { class: "tools" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ["Server", "Tool", "Result", "Latency", "Bytes"].map((t) => h("th", {}, t)),
      ),
    ),
    h("tbody", {}, calls.map(callRows)),
  );
}

function stepCard(e, differsInReplay = false, renders = null) {
  const s = e.step;
  const r = s.execution_result;
  const err = s.error ?? r?.error;
  return h(
    "section",
    { class: `card step step-${s.status}`, id: `step-${s.index}` },
    h(
      "header",
      {},
      h("span", { class: "kind" }, s.type),
      h(
        "span",
        { class: "title" },
        `step ${s.index}`,
        s.plan_step !== undefined ? ` · plan step ${s.plan_step}` : "",
      ),
      h("span", { class: `tag status-${s.status}` }, s.status.replace("_", " ")),
      s.attempts > 1 ? h("span", { class: "tag warn" }, `attempt ${s.attempts}`) : null,
      differsInReplay ? h("span", { class: "tag warn replay-differs" }, "differs in replay") : null,
      h(
        "a",
        {
          href: `#plan-${s.plan_version}`,
          class: "jump muted",
          dataset: { target: `plan-${s.plan_version}` },
        },
        `plan v${s.plan_version}`,
      ),
      h("time", {}, when(e.at)),
    ),
    h("p", { class: "desc" }, s.description),
    e.code_html ? highlighted(e.code_html) : null,
    robotRenders(renders),
    s.conclusion
      ? h("div", { class: "conclusion" }, h("div", { class: "label" }, "Answer"), h("p", {}, s.conclusion))
      : null,
    s.question
      ? h("div", { class: "question" }, h("div", { class: "label" }, "Question"), h("p", {}, s.question))
      : null,
    s.human_input
      ? h("div", { class: "human" }, h("div", { class: "label" }, "Human"), h("p", {}, s.human_input))
      : null,
    r && r.ok && r.value !== undefined
      ? h(
          "div",
          { class: "result" },
          h("div", { class: "label" }, "Result", e.result_truncated ? " (truncated in the log)" : ""),
          h("pre", { class: "value" }, asText(r.value)),
        )
      : null,
    r?.logs?.length
      ? h(
          "details",
          {},
          h("summary", {}, `console (${r.logs.length})`),
          h("pre", { class: "value" }, r.logs.join("\n")),
        )
      : null,
    err
      ? h(
          "div",
          { class: "err" },
          h("strong", {}, err.code),
          " ",
          err.message,
          err.tool ? ` (${err.tool})` : "",
        )
      : null,
    toolTable(e.tool_calls),
  );
}

function llmCard(e, sessionId) {
  const c = e.call;
  const detail = h("div", { class: "llm-detail" });
  const button = h("button", { class: "small" }, "Show prompt and response");
  button.addEventListener("click", async () => {
    if (detail.childElementCount) {
      detail.replaceChildren();
      button.textContent = "Show prompt and response";
      return;
    }
    try {
      const d = await getJson(`/api/sessions/${sessionId}/llm/${e.n}`);
      clear(
        detail,
        h("div", { class: "label" }, "Prompt"),
        h("pre", { class: "value" }, d.prompt),
        h("div", { class: "label" }, "Raw response"),
        h("pre", { class: "value" }, d.raw_response),
        d.error ? h("p", { class: "err" }, d.error) : null,
      );
      button.textContent = "Hide";
    } catch (err) {
      detail.replaceChildren(errorBox(err));
    }
  });
  return h(
    "section",
    { class: `card llm ${c.ok ? "" : "bad"}` },
    h(
      "header",
      {},
      h("span", { class: "kind" }, "Model"),
      h("span", { class: "title" }, c.role),
      h("span", { class: "muted" }, `${c.provider}:${c.model}`),
      h("span", { class: "muted" }, `${num(c.input_tokens)} in · ${num(c.output_tokens)} out`),
      c.cost_usd !== undefined ? h("span", { class: "muted" }, usd(c.cost_usd)) : null,
      h("span", { class: "muted" }, secs(c.latency_ms), c.attempts > 1 ? ` · ${c.attempts} attempts` : ""),
      h("time", {}, when(e.at)),
    ),
    c.error ? h("p", { class: "err" }, c.error) : null,
    button,
    detail,
  );
}

function humanCard(e) {
  const i = e.input;
  return h(
    "section",
    { class: "card human-card" },
    h(
      "header",
      {},
      h("span", { class: "kind" }, "Human"),
      h("span", { class: "title" }, i.kind.replace("_", " ")),
      h("span", { class: "muted" }, `answered by ${i.answered_by}`),
      h("time", {}, when(e.at)),
    ),
    h("div", { class: "label" }, "Question"),
    h("p", {}, i.question),
    h("div", { class: "label" }, "Answer"),
    h("p", { class: "answer-text" }, i.answer),
  );
}

function toolCard(e) {
  return h(
    "section",
    { class: "card tool" },
    h(
      "header",
      {},
      h("span", { class: "kind" }, "Tool"),
      h("span", { class: "title" }, "outside a step"),
      h("time", {}, when(e.at)),
    ),
    toolTable([e.call]),
  );
}

function children(list) {
  if (!list.length) return null;
  return h(
    "section",
    { class: "children" },
    h("h2", {}, "Sub-agent sessions"),
    h(
      "ul",
      {},
      list.map((c) =>
        h(
          "li",
          {},
          statusBadge(c.status),
          " ",
          h("strong", {}, c.agent ?? "agent"),
          " ",
          h("a", { href: `#/s/${c.session_id}` }, c.original_query),
          c.final_answer ? h("span", { class: "muted" }, ` → ${c.final_answer}`) : null,
        ),
      ),
    ),
  );
}

function renderSession(page, onReplay) {
  const s = page.session;
  const id = s.session_id;
  const differs = new Set((page.replay?.report?.differences ?? []).map((d) => d.step));
  const card = (e) =>
    e.kind === "snapshot"
      ? snapshotCard(e)
      : e.kind === "plan"
        ? planCard(e)
        : e.kind === "step"
          ? stepCard(e, differs.has(e.step.index), page.robot?.steps[e.step.index])
          : e.kind === "llm"
            ? llmCard(e, id)
            : e.kind === "human"
              ? humanCard(e)
              : toolCard(e);
  return [
    h(
      "div",
      { class: "session-head" },
      h(
        "div",
        { class: "crumbs muted" },
        h("a", { href: "#/" }, "Sessions"),
        " / ",
        id,
        s.parent_session_id
          ? [
              " · sub-agent of ",
              h("a", { href: `#/s/${s.parent_session_id}` }, s.parent_session_id.slice(0, 8)),
            ]
          : null,
      ),
      h("h1", {}, s.original_query),
      h(
        "div",
        { class: "meta" },
        statusBadge(s.status),
        s.agent ? h("span", { class: "tag" }, s.agent) : null,
        h("span", { class: "muted" }, `started ${when(s.created_at)}`),
        s.finished_at ? h("span", { class: "muted" }, `finished ${when(s.finished_at)}`) : null,
      ),
      s.final_answer
        ? h(
            "div",
            { class: "final" },
            h("div", { class: "label" }, "Answer"),
            h("p", { id: "final-answer" }, s.final_answer),
          )
        : null,
      s.status_reason && s.status !== "succeeded" ? h("p", { class: "reason" }, s.status_reason) : null,
      s.pending_question && s.status === "awaiting_human"
        ? h(
            "div",
            { class: "question" },
            h("div", { class: "label" }, "Waiting on a human"),
            h("p", {}, s.pending_question),
            page.pending_human && page.resume?.state !== "running"
              ? answerForm(id, page.pending_human)
              : null,
            page.resume?.state === "running" ? h("p", { class: "muted" }, "Answered: resuming…") : null,
            h("p", { class: "muted" }, `Or at a terminal: pda resume ${id.slice(0, 8)}`),
          )
        : null,
      page.resume?.state === "failed" ? h("p", { class: "err" }, page.resume.message) : null,
      totals(page),
      page.robot?.note ? h("p", { class: "reason robot-note" }, page.robot.note) : null,
      replayPanel(page, onReplay),
    ),
    children(page.children),
    h("div", { class: "timeline" }, page.events.map(card)),
  ];
}

/** Whether the page must keep listening: the session runs or waits, or an answer or a replay is under way. */
const busy = (page) =>
  FOLLOWED.has(page.session.status) || page.resume?.state === "running" || page.replay?.state === "running";

export function sessionView(main, id) {
  let events = null;
  let closed = false;
  const show = (page) => {
    const y = window.scrollY;
    clear(
      main,
      renderSession(page, () => follow(page.session.session_id, "")),
    );
    window.scrollTo(0, y);
  };
  // The server sends the page again each time the store (or a replay's end) has something new.
  const follow = (sid, version) => {
    if (events || closed) return;
    events = new EventSource(`/api/sessions/${sid}/live?version=${encodeURIComponent(version)}`);
    events.onopen = () => setLive(true);
    events.onerror = () => setLive(false);
    events.addEventListener("session", (m) => {
      const next = JSON.parse(m.data);
      show(next);
      if (!busy(next)) {
        events.close();
        events = null;
        setLive(false);
      }
    });
  };
  getJson(`/api/sessions/${encodeURIComponent(id)}`)
    .then((page) => {
      if (closed) return;
      show(page);
      if (busy(page)) follow(page.session.session_id, page.version);
    })
    .catch((e) => clear(main, h("h1", {}, "Session"), errorBox(e)));
  return () => {
    closed = true;
    events?.close();
    setLive(false);
  };
}

// ---- batch runs ----

export function batchListView(main) {
  getJson("/api/batch")
    .then((runs) =>
      clear(
        main,
        h("h1", {}, "Batch runs"),
        runs.length === 0
          ? h("p", { class: "muted" }, "No batch runs in this store yet (pda batch <file> --out <dir>).")
          : h(
              "div",
              { class: "table-wrap" },
              h(
                "table",
                { class: "runs" },
                h(
                  "thead",
                  {},
                  h(
                    "tr",
                    {},
                    ["Run", "Input", "Status", "Items", "Started", "Finished"].map((t) => h("th", {}, t)),
                  ),
                ),
                h(
                  "tbody",
                  {},
                  runs.map((r) =>
                    h(
                      "tr",
                      {},
                      h("td", {}, h("a", { href: `#/batch/${encodeURIComponent(r.id)}` }, r.id)),
                      h("td", {}, r.input_file ?? ""),
                      h("td", {}, r.status),
                      h(
                        "td",
                        {},
                        `${num(r.items)} `,
                        h(
                          "span",
                          { class: "muted" },
                          Object.entries(r.item_statuses)
                            .map(([k, v]) => `${k} ${v}`)
                            .join(" · "),
                        ),
                      ),
                      h("td", { class: "when" }, when(r.started_at)),
                      h("td", { class: "when" }, when(r.finished_at)),
                    ),
                  ),
                ),
              ),
            ),
      ),
    )
    .catch((e) => clear(main, h("h1", {}, "Batch runs"), errorBox(e)));
  return () => {};
}

/** A table from a header row and rows of text. */
function dataTable(cls, head, rows) {
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: cls },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          head.map((t) => h("th", {}, t)),
        ),
      ),
      h(
        "tbody",
        {},
        rows.map((r) =>
          h(
            "tr",
            {},
            r.map((c) => h("td", {}, c)),
          ),
        ),
      ),
    ),
  );
}

// A report's lines mark folders and tools as `code`, for Markdown; the page shows them plain.
const plain = (text) => text.replace(/`([^`]*)`/g, "$1");

/** performance/'s report (one run's or two runs' comparison): its facts, chart and sections. */
function reportBody(report) {
  return [
    h(
      "ul",
      { class: "facts" },
      report.facts.map((f) => h("li", {}, plain(f))),
    ),
    h(
      "figure",
      { class: "chart" },
      // As an image, the SVG is a picture only: nothing in it can run or reach the page.
      h("img", {
        src: `data:image/svg+xml;charset=utf-8,${encodeURIComponent(report.chart)}`,
        alt: "Per-tool success rate and latency",
      }),
    ),
    report.sections.map((s) =>
      h(
        "section",
        { class: `report-section level-${s.level}` },
        h(s.level === 2 ? "h2" : "h3", {}, s.title),
        s.table ? dataTable("report", s.table.head, s.table.rows) : null,
        !s.table && s.empty ? h("p", { class: "muted" }, s.empty) : null,
        s.items
          ? h(
              "ul",
              {},
              s.items.map((i) => h("li", {}, plain(i))),
            )
          : null,
        s.note ? h("p", { class: "muted" }, s.note) : null,
      ),
    ),
  ];
}

const TOOL_HEAD = [
  "Tool Name",
  "Server",
  "Number of Times Invoked",
  "Success Rate (%)",
  "Failures",
  "Error Kinds",
  "Median ms",
  "P95 ms",
];

export function batchRunView(main, id) {
  Promise.all([getJson(`/api/batch/${encodeURIComponent(id)}`), getJson("/api/batch")])
    .then(([{ run, items, report, tools }, runs]) => {
      const by = {};
      for (const i of items) by[i.status] = (by[i.status] ?? 0) + 1;
      const others = runs.filter((r) => r.id !== run.id);
      const pick = h(
        "select",
        { name: "other", "aria-label": "run to compare with" },
        others.map((r) =>
          h("option", { value: r.id }, `${r.id.slice(0, 8)} · ${when(r.started_at)} · ${r.input_file ?? ""}`),
        ),
      );
      clear(
        main,
        h("div", { class: "crumbs muted" }, h("a", { href: "#/batch" }, "Batch runs"), " / ", run.id),
        h("h1", {}, `Batch run ${run.id}`),
        h(
          "div",
          { class: "meta" },
          h("span", { class: "tag" }, run.status),
          h("span", { class: "muted" }, run.input_file ?? ""),
          h("span", { class: "muted" }, `started ${when(run.started_at)}`),
          h("span", { class: "muted" }, `finished ${when(run.finished_at)}`),
        ),
        h(
          "div",
          { class: "totals" },
          h(
            "div",
            { class: "total" },
            h("div", { class: "label" }, "Items"),
            h("div", { class: "value" }, num(items.length)),
          ),
          Object.entries(by).map(([k, v]) =>
            h(
              "div",
              { class: "total" },
              h("div", { class: "label" }, k),
              h("div", { class: "value" }, num(v)),
            ),
          ),
        ),
        others.length
          ? h(
              "form",
              {
                class: "compare filters",
                onsubmit: (ev) => {
                  ev.preventDefault();
                  location.hash = `#/batch/${encodeURIComponent(pick.value)}/compare/${encodeURIComponent(run.id)}`;
                },
              },
              h("label", {}, "Compare against (A, the baseline) ", pick),
              h("button", { type: "submit" }, "Compare"),
            )
          : null,
        h("section", { class: "report" }, h("h2", {}, "Summary"), reportBody(report)),
        h(
          "section",
          { class: "tool-perf" },
          h("h2", {}, "Tool performance"),
          tools.length
            ? dataTable(
                "tool-perf",
                TOOL_HEAD,
                tools.map((t) =>
                  TOOL_HEAD.map((k) =>
                    k === "Success Rate (%)" ? t[k].toFixed(1) : String(t[k] === "" ? "–" : t[k]),
                  ),
                ),
              )
            : h("p", { class: "muted" }, "No tool calls in the done items."),
        ),
        h("h2", {}, "Items"),
        h(
          "p",
          {},
          h("a", { href: `#/?run=${encodeURIComponent(run.id)}` }, "This run's sessions in the session list"),
        ),
        h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { class: "items" },
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                ["Item", "Query", "Status", "Session"].map((t) => h("th", {}, t)),
              ),
            ),
            h(
              "tbody",
              {},
              items.map((i) =>
                h(
                  "tr",
                  {},
                  h("td", {}, i.item_key),
                  h("td", { class: "query" }, i.query),
                  h("td", {}, i.status),
                  h(
                    "td",
                    {},
                    i.session_id ? h("a", { href: `#/s/${i.session_id}` }, i.session_id.slice(0, 8)) : "—",
                  ),
                ),
              ),
            ),
          ),
        ),
      );
    })
    .catch((e) => clear(main, h("h1", {}, "Batch run"), errorBox(e)));
  return () => {};
}

/** Run a (the baseline) against run b: performance/'s comparison, as `pda report <a> <b>` writes it. */
export function batchCompareView(main, a, b) {
  getJson(`/api/batch/${encodeURIComponent(a)}/compare/${encodeURIComponent(b)}`)
    .then((report) =>
      clear(
        main,
        h(
          "div",
          { class: "crumbs muted" },
          h("a", { href: "#/batch" }, "Batch runs"),
          " / ",
          h("a", { href: `#/batch/${encodeURIComponent(a)}` }, a.slice(0, 8)),
          " vs ",
          h("a", { href: `#/batch/${encodeURIComponent(b)}` }, b.slice(0, 8)),
        ),
        h("h1", {}, report.title),
        h("section", { class: "report comparison" }, reportBody(report)),
      ),
    )
    .catch((e) => clear(main, h("h1", {}, "Comparison"), errorBox(e)));
  return () => {};
}
