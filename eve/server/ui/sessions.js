// The sessions page: every session with what it is doing, refreshed while the page is open.

import { api } from "./api.js";
import { badge, cost, fill, h, tokens, when, who } from "./dom.js";

const REFRESH_MS = 2000;
const RENDERED = "eve:sessions-rendered";

function row(entry) {
  const cell = (label, ...children) => h("td", { "data-label": label }, ...children);
  return h("tr", { "data-session": entry.sessionId },
    h("td", { class: "id", "data-label": "Session" },
      h("a", { href: `#/session/${encodeURIComponent(entry.sessionId)}` }, entry.sessionId)),
    cell("Owner", who(entry.owner)),
    cell("Activity", badge(entry.activity)),
    cell("Last activity", h("time", { datetime: entry.lastActivityAt }, when(entry.lastActivityAt))),
    cell("Turns", String(entry.turns)),
    cell("Usage", `${tokens(entry.usage)} · ${cost(entry.cost)}`));
}

export function sessionsPage(main) {
  const body = h("tbody", {});
  const status = h("p", { class: "muted", role: "status" });
  const more = h("button", { type: "button", hidden: true }, "Load older sessions");
  const message = h("textarea", { id: "first-message", rows: 2, placeholder: "Optional: the first message" });
  const error = h("p", { class: "error", role: "alert" });
  let older = [];
  let cursor = null;
  let timer = null;

  async function refresh() {
    try {
      const page = await api.sessions(50);
      const shown = new Set(page.sessions.map((s) => s.sessionId));
      const rows = [...page.sessions, ...older.filter((s) => !shown.has(s.sessionId))];
      fill(body, rows.map(row));
      if (!older.length) cursor = page.nextCursor;
      more.hidden = !cursor;
      status.textContent = rows.length ? `${rows.length} sessions` : "No sessions yet.";
      // what the browser test and bench/ui.py read as the first render (Performance API)
      if (!performance.getEntriesByName(RENDERED).length) performance.mark(RENDERED);
    } catch (err) {
      status.textContent = `could not list sessions: ${err.message}`;
    }
    timer = setTimeout(refresh, REFRESH_MS);
  }

  more.addEventListener("click", async () => {
    const page = await api.sessions(50, cursor);
    older = [...older, ...page.sessions];
    cursor = page.nextCursor;
    clearTimeout(timer);
    refresh();
  });

  const form = h("form", { class: "compose", onsubmit: async (event) => {
    event.preventDefault();
    try {
      const created = await api.create(message.value.trim() || null);
      location.hash = `#/session/${encodeURIComponent(created.sessionId)}`;
    } catch (err) {
      error.textContent = `could not create a session: ${err.message}`;
    }
  } },
  h("label", { for: "first-message" }, "New session"), message,
  h("div", { class: "row" }, h("button", { type: "submit", class: "primary" }, "Create session")), error);

  fill(main, h("h1", {}, "Sessions"), form,
    h("table", {}, h("caption", { class: "muted" }, "Newest first"),
      h("thead", {}, h("tr", {}, ["Session", "Owner", "Activity", "Last activity", "Turns", "Usage"].map((t) => h("th", { scope: "col" }, t)))),
      body),
    status, more);
  refresh();
  return () => clearTimeout(timer);
}
