// A useChat-style page for eve's ai_sdk channel: the ai package's own Chat (AbstractChat, which
// useChat wraps in React state) with its DefaultChatTransport, rendered by hand. Bundled into
// page/chat.js with esbuild (see README.md); the channel serves page/ at <channel path>/page/.
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
} from 'ai';

// the channel's path: the page is served at <path>/page/
const api = location.pathname.replace(/\/page\/.*$/, '');
// the bearer token, from the address's #token=… (never sent to the server as part of the URL)
const token = new URLSearchParams(location.hash.slice(1)).get('token') ?? '';
const params = new URLSearchParams(location.search);
const chatId = params.get('chat') ?? crypto.randomUUID();

// what useChat keeps in React state: every change renders the page again
class PageState {
  constructor() {
    this.messages = [];
    this.error = undefined;
    this._status = 'ready';
  }
  get status() {
    return this._status;
  }
  set status(value) {
    this._status = value;
    render();
  }
  pushMessage(message) {
    this.messages = [...this.messages, message];
    render();
  }
  popMessage() {
    this.messages = this.messages.slice(0, -1);
    render();
  }
  replaceMessage(index, message) {
    this.messages = this.messages.map((m, i) => (i === index ? message : m));
    render();
  }
  snapshot(thing) {
    return structuredClone(thing);
  }
}

class PageChat extends AbstractChat {
  constructor(init) {
    super({ ...init, state: new PageState() });
  }
}

const chat = new PageChat({
  id: chatId,
  transport: new DefaultChatTransport({ api, headers: { authorization: `Bearer ${token}` } }),
  // an approval answered: the chat sends it at once, and the turn goes on
  sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  onError: () => render(),
});

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

function partView(part) {
  if (part.type === 'text') return el('p', { className: 'text' }, part.text);
  if (part.type === 'reasoning') return el('p', { className: 'reasoning' }, part.text);
  if (!part.type.startsWith('tool-')) return null;
  const view = el('div', { className: `tool ${part.state}` }, `${part.type.slice(5)}: ${part.state}`);
  if (part.state === 'output-available') view.append(el('pre', { className: 'output' }, String(part.output)));
  if (part.state === 'approval-requested') {
    const answer = (approved) => () => chat.addToolApprovalResponse({ id: part.approval.id, approved });
    view.append(
      el('button', { className: 'approve', onclick: answer(true) }, 'Approve'),
      el('button', { className: 'deny', onclick: answer(false) }, 'Deny'),
    );
  }
  return view;
}

function render() {
  const list = document.getElementById('messages');
  if (!list || !chat) return;
  list.replaceChildren(
    ...chat.messages.map((message) =>
      el('li', { className: message.role }, ...message.parts.map(partView).filter(Boolean)),
    ),
  );
  document.getElementById('status').textContent = chat.status;
  document.getElementById('error').textContent = chat.error ? chat.error.message : '';
}

document.getElementById('composer').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = document.getElementById('message');
  if (!input.value.trim()) return;
  chat.sendMessage({ text: input.value });
  input.value = '';
});

// Stop: eve cancels the turn (a dropped request would only be resumed), then the chat stops
document.getElementById('stop').addEventListener('click', async () => {
  await fetch(`${api}/${encodeURIComponent(chatId)}/cancel`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
});

// a chat named in the address goes on where it was: a running or parked turn is replayed
if (params.has('chat')) chat.resumeStream();
render();
