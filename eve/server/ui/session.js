// One session: its conversation as it streams, the raw event log, and its controls.

import { api, follow } from "./api.js";
import { Conversation } from "./conversation.js";
import { badge, cost, fill, h, pretty, tokens, who } from "./dom.js";

const SUMMARY_AFTER = new Set(["turn.completed", "turn.failed", "turn.cancelled", "turn.waiting",
  "session.waiting", "session.completed", "session.reset", "session.compacted", "input.resolved"]);

export function sessionPage(main, sessionId, setConnection) {
  const summary = h("p", { class: "summary muted", role: "status" });
  const feedback = h("p", { class: "muted", role: "status" });
  const thread = h("div", { class: "conversation", role: "log", "aria-label": "Conversation" });
  const log = h("ol", { class: "events", "aria-label": "Event log" });
  const logView = h("section", { hidden: true, "aria-label": "Event log" }, log);
  const conversation = new Conversation(thread, (requestId, optionId, values) => api.answer(sessionId, requestId, optionId, values));

  async function refreshSummary() {
    try {
      const s = await api.summary(sessionId);
      fill(summary, badge(s.status), ` · owner ${who(s.owner)}`,
        ` · ${s.turns} turns · ${tokens(s.usage)} · ${cost(s.cost)}`,
        s.endedReason ? ` · ended: ${s.endedReason}` : "");
    } catch (err) {
      fill(summary, h("span", { class: "error" }, err.message));
    }
  }

  const control = (label, run) => h("button", { type: "button", onclick: async () => {
    try {
      const answer = await run(sessionId);
      feedback.textContent = `${label}: ${answer.status}`;
    } catch (err) {
      feedback.textContent = `${label} failed: ${err.message}`;
    }
    refreshSummary();
  } }, label);

  const views = [["Conversation", thread], ["Event log", logView]];
  const tabs = views.map(([label, view], i) => h("button", { type: "button", "aria-pressed": String(i === 0),
    onclick: () => {
      views.forEach(([, other], j) => { other.hidden = j !== i; tabs[j].setAttribute("aria-pressed", String(j === i)); });
    } }, label));

  const message = h("textarea", { id: "message", rows: 3, required: true });
  const sendError = h("p", { class: "error", role: "alert" });
  const form = h("form", { class: "compose", onsubmit: async (event) => {
    event.preventDefault();
    const text = message.value.trim();
    if (!text) return;
    try {
      await api.send(sessionId, text);
      message.value = "";
      sendError.textContent = "";
    } catch (err) {
      sendError.textContent = `not sent: ${err.message}`;
    }
  } }, h("label", { for: "message" }, "Message"), message,
  h("div", { class: "row" }, h("button", { type: "submit", class: "primary" }, "Send")), sendError);

  fill(main,
    h("h1", {}, "Session ", h("code", {}, sessionId)), summary,
    h("div", { class: "row", role: "toolbar", "aria-label": "Session controls" },
      control("Cancel turn", api.cancel), control("Reset", api.reset), control("Compact", api.compact)),
    feedback,
    h("div", { class: "row", role: "group", "aria-label": "View" }, tabs),
    thread, logView, form);
  refreshSummary();

  return follow(sessionId, 0, (event) => {
    log.append(h("li", { "data-index": event.meta.index },
      h("span", { class: "index" }, `#${event.meta.index}`), h("code", {}, event.type),
      h("details", {}, h("summary", {}, "data"), h("pre", {}, pretty(event)))));
    conversation.add(event);
    if (SUMMARY_AFTER.has(event.type) && !event.data.parent) refreshSummary();
  }, setConnection);
}
