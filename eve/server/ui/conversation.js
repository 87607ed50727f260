// The conversation view of a session's events: turns, steps, streamed text, collapsed
// reasoning, tool calls with input, output and duration, approvals and questions as forms,
// and each subagent or workflow-tool task nested under the call that started it.

import { append, badge, cost, h, pretty, tokens, who } from "./dom.js";
import { formFields } from "./form_fields.js";

const key = (sessionId, callId) => `${sessionId} ${callId}`;

/** A tool's output as the model reads it; JSON is indented for a person. */
function readable(output) {
  if (!/^\s*[[{]/.test(output)) return output;
  try {
    return pretty(JSON.parse(output));
  } catch {
    return output;
  }
}

/** One session's thread: the root session's, or a subagent's inside its call. */
class Thread {
  constructor(container, conversation) {
    this.container = container;
    this.conversation = conversation;
    this.turn = null;
    this.step = null;
    this.text = null;
    this.reasoning = null;
  }

  place(node) {
    (this.step || this.turn || this.container).append(node);
    return node;
  }

  note(text, kind = "") {
    return this.place(h("p", { class: `note ${kind}` }, text));
  }

  add(event) {
    const { type, data } = event;
    switch (type) {
      case "turn.started":
        this.turn = h("section", { class: "turn", "data-turn": data.turn_id },
          h("header", {}, data.turn_id || "turn"));
        this.step = null;
        this.container.append(this.turn);
        return;
      case "message.received":
        this.place(h("div", { class: "message user" },
          h("span", { class: "who" }, data.parent ? "Task" : "You"), data.message,
          data.attachments?.length ? h("span", { class: "note" }, ` (+${data.attachments.length} attachments)`) : null));
        return;
      case "step.started":
        this.step = h("section", { class: "step", "aria-label": `Step ${(data.step_index ?? 0) + 1}` },
          h("header", {}, `step ${(data.step_index ?? 0) + 1}`));
        (this.turn || this.container).append(this.step);
        this.text = null;
        this.reasoning = null;
        return;
      case "reasoning.appended":
        if (!this.reasoning) {
          const body = h("pre", {});
          this.place(h("details", { class: "reasoning" }, h("summary", {}, "Reasoning"), body));
          this.reasoning = body;
        }
        this.reasoning.append(data.reasoning_delta);
        return;
      case "message.appended":
        this.answer().append(data.message_delta);
        return;
      case "message.completed":
        if (data.message) this.answer().replaceChildren(data.message);
        this.text = null;
        return;
      case "model.retrying":
        if (this.text) this.text.replaceChildren();
        this.note(`retrying the model call (${data.reason})`);
        return;
      case "model.fallback":
        if (this.text) this.text.replaceChildren();
        this.note(`${data.from_model} failed; asking ${data.to_model} (${data.reason})`);
        return;
      case "actions.requested":
        for (const action of data.actions) this.conversation.addCall(this, event, action);
        return;
      case "step.completed":
        this.step = null;
        return;
      case "turn.completed":
        this.endTurn(`done · ${data.stop_reason} · ${tokens(data.usage)} · ${cost(data.cost || {})}`);
        return;
      case "turn.failed":
        this.endTurn(`failed: ${data.error}`, "failed", "alert");
        return;
      case "turn.cancelled":
        this.endTurn(`cancelled: ${data.reason}`, "failed");
        return;
      case "turn.waiting":
        this.note("waiting for a person's answer");
        return;
      case "session.started": this.note("session started"); return;
      case "session.waiting": return;
      case "session.completed": this.note(`session ended: ${data.reason}`, "failed"); return;
      case "session.reset":
        this.turn = this.step = null;
        this.note("session reset: history and state cleared");
        return;
      case "session.compacted":
        this.note(`compacted: ${data.messages_folded} messages folded (${data.tokens_before} → ${data.tokens_after} tokens)`);
        return;
      case "session.compaction_failed": this.note(`compaction failed: ${data.error}`, "failed"); return;
      case "skill.loaded": this.note(`skill loaded: ${data.name}`); return;
      case "hook.failed": this.note(`hook ${data.hook} failed on ${data.event}: ${data.error}`, "failed"); return;
      case "authorization.required": this.signIn(data); return;
      default:
        this.note(type);
    }
  }

  /** An MCP connection's OAuth sign-in: the link opens the authorization server in a new
   * tab, which sends the person back to eve's callback; the turn goes on by itself. Only an
   * http(s) link is made one (a server's metadata names it). */
  signIn(data) {
    const safe = new RegExp("^https?:[/][/]", "i").test(data.url);
    this.place(h("p", { class: "note sign-in", role: "status" },
      `connection ${data.connection} needs you to sign in (waiting ${data.timeout_seconds}s): `,
      safe ? h("a", { href: data.url, target: "_blank", rel: "noopener noreferrer" }, "sign in") : data.url));
  }

  answer() {
    if (!this.text) {
      this.text = h("span", { class: "text" });
      this.place(h("div", { class: "message assistant", "aria-live": "polite" },
        h("span", { class: "who" }, "Agent"), this.text));
    }
    return this.text;
  }

  endTurn(text, kind = "", role = undefined) {
    this.step = null;
    this.place(h("p", { class: `note ${kind}`, role }, text));
    this.turn = null;
  }
}

/** A tool call's box: header, input, progress, nested task, question or approval, output. */
class Call {
  constructor(action, at) {
    this.at = Date.parse(at);
    this.status = badge("running");
    this.duration = h("span", { class: "muted" });
    this.progress = h("div", {});
    this.nested = null;
    this.asks = h("div", {});
    this.output = h("div", {});
    this.element = h("article", { class: "call", "data-call": action.call_id, "data-tool": action.name },
      h("header", {}, h("h3", { class: "name" }, action.name), this.status, this.duration,
        action.via ? h("span", { class: "muted" }, `via ${action.via}`) : null),
      h("details", { open: true }, h("summary", {}, "Input"), h("pre", { class: "input" }, pretty(action.input))),
      this.progress, this.asks, this.output);
  }

  task(data) {
    this.nested = h("div", { class: "nested", role: "group", "aria-label": `${data.kind} ${data.name}` },
      h("p", { class: "note" }, `${data.kind} ${data.name} · ${data.task_id}`));
    this.output.before(this.nested);
    return this.nested;
  }

  mark(status) {
    this.status.replaceWith((this.status = badge(status)));
  }

  result(data, at) {
    this.mark(data.status);
    const ms = Date.parse(at) - this.at;
    if (!Number.isNaN(ms)) this.duration.textContent = `${ms} ms`;
    append(this.output, h("p", { class: "note" }, data.status === "completed" ? "Output" : "Error"),
      h("pre", { class: `output ${data.status}` }, readable(data.output)),
      // the tool's traceback is for a person (the model read only the error): closed until asked
      data.traceback ? h("details", { class: "traceback" }, h("summary", {}, "Traceback"),
        h("pre", {}, data.traceback)) : null);
  }
}

export class Conversation {
  /** `answer(requestId, optionId, values)` sends a person's choice (and a form's values). */
  constructor(container, answer) {
    this.root = new Thread(container, this);
    this.answer = answer;
    this.threads = new Map(); // subagent session id -> Thread
    this.calls = new Map(); // "session call" -> Call
    this.forms = new Map(); // request id -> fieldset
  }

  threadOf(data) {
    if (!data.parent) return this.root;
    let thread = this.threads.get(data.session_id);
    if (!thread) {
      const call = this.calls.get(key(data.parent.session_id, data.parent.call_id));
      const host = call ? call.nested || call.task({ kind: "subagent", name: data.node_id, task_id: data.session_id }) : this.root.container;
      thread = new Thread(host, this);
      this.threads.set(data.session_id, thread);
    }
    return thread;
  }

  add(event) {
    const { type, data } = event;
    const thread = this.threadOf(data);
    const call = data.call_id ? this.calls.get(key(data.session_id, data.call_id)) : undefined;
    switch (type) {
      case "action.partial":
        if (call) append(call.progress, h("pre", { class: "partial" }, pretty(data.partial)));
        return;
      case "action.result":
        if (call) call.result(data, event.meta.at);
        else thread.note(`${data.name}: ${data.status}`);
        return;
      case "task.started":
        if (call && !call.nested) call.task(data);
        return;
      case "task.settled":
        if (call?.nested) append(call.nested, h("p", { class: "note" }, `task ${data.status}`));
        return;
      case "input.requested":
        for (const request of data.requests) this.ask(thread, data, request);
        return;
      case "input.resolved":
        this.resolved(data);
        return;
      default:
        thread.add(event);
    }
  }

  addCall(thread, event, action) {
    const call = new Call(action, event.meta.at);
    this.calls.set(key(event.data.session_id, action.call_id), call);
    thread.place(call.element);
  }

  ask(thread, data, request) {
    const legend = {
      "tool-approval": `Approve ${request.tool_name}?`,
      question: request.question,
      "session-limit": `The session reached ${request.limit} (${request.used} of ${request.allowed})`,
      form: `${request.connection} asks: ${request.message}`,
    }[request.kind] || request.kind;
    // an MCP server's form: its fields, whose values go with "accept"
    const fields = request.kind === "form" ? formFields(request.schema) : null;
    const status = h("p", { class: "note", role: "status" });
    const buttons = request.options.map((option) =>
      h("button", { type: "button", class: option.id === "approve" ? "primary" : "", "data-option": option.id,
        onclick: async () => {
          for (const button of buttons) button.disabled = true;
          status.textContent = `sending ${option.label}…`;
          try {
            const values = fields && option.id === "accept" ? fields.values() : undefined;
            await this.answer(request.request_id, option.id, values);
          } catch (error) {
            status.textContent = `not sent: ${error.message}`;
            for (const button of buttons) button.disabled = false;
          }
        } }, option.label));
    const form = h("fieldset", { class: "ask", "data-request": request.request_id },
      h("legend", {}, legend), fields?.element, h("div", { class: "row" }, buttons), status);
    const call = request.call_id ? this.calls.get(key(data.session_id, request.call_id)) : undefined;
    this.forms.set(request.request_id, { form, buttons, status, call });
    if (call) {
      call.asks.append(form);
      call.mark("waiting");
    } else thread.place(form);
  }

  resolved(data) {
    const asked = this.forms.get(data.request_id);
    if (!asked) return;
    for (const button of asked.buttons) button.disabled = true;
    // an answer names who gave it; a cancelled request names no one
    asked.status.textContent = data.responder
      ? `answered: ${data.option_id} by ${who(data.responder)}` : `answered: ${data.option_id}`;
    asked.form.classList.add("answered");
    if (asked.call && asked.call.status.textContent === "waiting") asked.call.mark("running");
  }
}
