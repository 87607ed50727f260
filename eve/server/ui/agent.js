// The agent page: what `eve info` shows, from GET info, and its schedules' runs.

import { api } from "./api.js";
import { badge, fill, h, pretty, when } from "./dom.js";

function tool(t) {
  return h("li", { "data-tool": t.name },
    h("h3", {}, t.name), h("p", {}, t.description || ""),
    h("p", { class: "muted" }, [t.handling || t.kind, t.approval && t.approval !== "never" ? `approval: ${t.approval}` : null,
      t.deferred ? "deferred" : null, t.source].filter(Boolean).join(" · ")),
    t.input_schema ? h("details", {}, h("summary", {}, "Input schema"), h("pre", {}, pretty(t.input_schema))) : null);
}

function node(n, title) {
  return h("section", { "aria-label": title },
    h("h2", {}, title),
    h("p", {}, n.description || "", " ", h("span", { class: "muted" }, `model ${n.model}`)),
    h("h3", {}, `Tools (${n.tools.length})`), h("ul", { class: "tool-list" }, n.tools.map(tool)),
    n.skills?.length ? [h("h3", {}, "Skills"), h("ul", {}, n.skills.map((s) => h("li", {}, h("strong", {}, s.name), ` — ${s.description}`)))] : null,
    n.hooks?.length ? [h("h3", {}, "Hooks"), h("ul", {}, n.hooks.map((k) => h("li", {}, h("strong", {}, k.name), ` on ${k.events.join(", ")} (${k.source})`)))] : null);
}

// the doors a server opens to the agent beside its session API (agent/channels/)
function channels(list) {
  if (!list?.length) return null;
  return h("section", { "aria-label": "Channels" },
    h("h2", {}, `Channels (${list.length})`),
    h("ul", { class: "channel-list" }, list.map((c) => h("li", { "data-channel": c.name },
      h("strong", {}, c.name), ` ${c.kind} · `, h("code", {}, `${c.method} ${c.url_path}`),
      h("span", { class: "muted" }, ` (${c.source})`)))));
}

// the runs on a clock (agent/schedules/): next and last run, run now, pause and resume
function lastRun(run) {
  if (!run) return "never ran";
  const where = run.session_id
    ? h("a", { href: `#/session/${encodeURIComponent(run.session_id)}` }, run.session_id)
    : "no session";
  return [`last ${when(run.tick)}${run.manual ? " (manual)" : ""} · `, badge(run.status.toLowerCase()), " · ", where];
}

function schedule(s, redraw) {
  const act = (call) => async () => {
    try { await call(s.name); } catch (err) { alert(`${s.name}: ${err.message}`); }
    redraw();
  };
  return h("li", { "data-schedule": s.name },
    h("strong", {}, s.name), " ", h("code", {}, s.cron), h("span", { class: "muted" }, ` ${s.timezone} (${s.source})`),
    h("p", {}, s.paused ? badge("paused") : `next ${when(s.next_runs[0])}`, " · ", lastRun(s.last_run)),
    h("div", { class: "row" },
      h("button", { type: "button", onclick: act(api.runSchedule) }, "Run now"),
      s.paused
        ? h("button", { type: "button", onclick: act(api.resumeSchedule) }, "Resume")
        : h("button", { type: "button", onclick: act(api.pauseSchedule) }, "Pause")));
}

function schedules() {
  const section = h("section", { "aria-label": "Schedules" });
  const redraw = () => api.schedules().then((answer) => {
    const list = answer.schedules;
    fill(section, list.length ? [h("h2", {}, `Schedules (${list.length})`),
      h("ul", { class: "schedule-list" }, list.map((s) => schedule(s, redraw)))] : []);
  }, (err) => fill(section, h("p", { class: "error" }, `could not list schedules: ${err.message}`)));
  redraw();
  return section;
}

export function agentPage(main) {
  const status = h("p", { class: "muted", role: "status" }, "Loading…");
  fill(main, h("h1", {}, "Agent"), status);
  api.info().then((info) => {
    fill(main, h("h1", {}, "Agent"),
      h("p", { class: "muted" }, `artifacts ${info.status} · ${info.diagnostics.errors} errors · ${info.diagnostics.warnings} warnings`),
      node(info.agent, "Root agent"),
      channels(info.channels),
      schedules(),
      info.subagents.map((s) => node(s, `Subagent ${s.path}`)));
  }, (err) => { status.textContent = `could not read the agent: ${err.message}`; });
  return () => {};
}
