// The ai package's own chat transport and UI message reader, run against eve's ai_sdk channel.
// argv[2]: {api, token, chatId, steps}; prints each step's outcome as JSON: the chunks as the
// transport validated them (its uiMessageChunkSchema), the UI message readUIMessageStream built
// from them, or the error the transport raised.
import { DefaultChatTransport, readUIMessageStream } from 'ai';

const { api, token, chatId, steps } = JSON.parse(process.argv[2]);
const transport = (bearer) =>
  new DefaultChatTransport({ api, headers: { authorization: `Bearer ${bearer}` } });
const messages = [];
let counter = 0;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const lastAssistant = () => {
  const last = messages[messages.length - 1];
  return last && last.role === 'assistant' ? last : undefined;
};

// reads a chunk stream to its end (or to `dropAfter`'s chunk type, then aborts the request)
async function read(stream, { message, abort, dropAfter }) {
  const [mine, theirs] = stream.tee();
  const chunks = [];
  const built = readUIMessageStream({ message, stream: theirs, terminateOnError: true });
  let final;
  const reading = (async () => {
    for await (const snapshot of built) final = snapshot;
  })();
  reading.catch(() => {}); // a dropped stream ends the reader with the abort
  const reader = mine.getReader();
  let dropped = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    chunks.push(value);
    // the test waits for this line to act while the stream is open
    if (chunks.length === 1) process.stderr.write(`streaming step ${results.length}\n`);
    if (dropAfter && value.type === dropAfter) {
      dropped = true;
      abort.abort();
      break;
    }
  }
  if (!dropped) await reading;
  return { chunks, message: final, dropped };
}

function place(message) {
  if (!message) return;
  const at = messages.findIndex((m) => m.id === message.id);
  if (at === -1) messages.push(message);
  else messages[at] = message;
}

async function send(step) {
  const abort = new AbortController();
  let continued;
  if (step.op === 'send') {
    messages.push({ id: `${chatId}-u${counter++}`, role: 'user', parts: [{ type: 'text', text: step.text }] });
  } else {
    // addToolApprovalResponse, as the chat does it: the part's state and its approval
    continued = lastAssistant();
    continued.parts = continued.parts.map((part) =>
      part.state === 'approval-requested'
        ? { ...part, state: 'approval-responded', approval: { ...part.approval, approved: step.approved } }
        : part,
    );
  }
  const stream = await transport(step.token ?? token).sendMessages({
    chatId: step.chatId ?? chatId,
    messages,
    trigger: step.trigger ?? 'submit-message',
    messageId: undefined,
    abortSignal: abort.signal,
  });
  const outcome = await read(stream, { message: continued, abort, dropAfter: step.dropAfter });
  place(outcome.message);
  return outcome;
}

// resumeStream: reconnect until the server answers (it may be restarting), then read it
async function resume(step) {
  for (let attempt = 0; ; attempt++) {
    try {
      const stream = await transport(token).reconnectToStream({ chatId });
      if (stream === null) return { resumed: false };
      const outcome = await read(stream, { abort: new AbortController() });
      place(outcome.message);
      const ended = outcome.chunks.some((c) => c.type === 'finish' || c.type === 'abort');
      if (ended || !step.untilEnd) return { resumed: true, ...outcome };
    } catch (error) {
      if (attempt > 200) throw error;
    }
    await sleep(50);
  }
}

async function cancel() {
  const response = await fetch(`${api}/${encodeURIComponent(chatId)}/cancel`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  return { status: response.status, body: await response.json() };
}

const results = [];
for (const step of steps) {
  try {
    // copied: a later step goes on with the same message objects
    if (step.op === 'send' || step.op === 'approve') results.push(structuredClone(await send(step)));
    else if (step.op === 'resume') results.push(structuredClone(await resume(step)));
    else if (step.op === 'cancel') results.push(await cancel());
    else throw new Error(`unknown step ${step.op}`);
  } catch (error) {
    results.push({ error: String(error.message ?? error) });
  }
}
process.stdout.write(JSON.stringify(results));
