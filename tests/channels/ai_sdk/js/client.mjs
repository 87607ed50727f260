// The ai package's own chat transport and UI message reader, run against eve's ai_sdk channel.
// One process serves a test module: each line of stdin is a chat to run, {api, token, chatId,
// steps}, or {validate: [SSE bodies]}; each answer is a line of stdout, {done: [outcomes]}:
// per step the chunks as the transport validated them (its uiMessageChunkSchema), the UI
// message readUIMessageStream built from them, or the error raised. While a step streams it
// says so first, {streaming: step}, for a test that acts while the stream is open.
import { createInterface } from 'node:readline';
import { DefaultChatTransport, readUIMessageStream } from 'ai';

const say = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
let api, token, chatId, messages, results;
const transport = (bearer) =>
  new DefaultChatTransport({ api, headers: { authorization: `Bearer ${bearer}` } });
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
    if (chunks.length === 1) say({ streaming: results.length });
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

async function chat(steps) {
  results = [];
  for (const step of steps) {
    try {
      // copied: a later step goes on with the same message objects
      if (step.op === 'send' || step.op === 'approve') results.push(structuredClone(await send(step)));
      else if (step.op === 'resume') results.push(structuredClone(await resume(step)));
      else throw new Error(`unknown step ${step.op}`);
    } catch (error) {
      results.push({ error: String(error.message ?? error) });
    }
  }
  return results;
}

// each body read as the transport reads a response, without a server
async function validate(bodies) {
  const found = [];
  for (const body of bodies) {
    const bytes = new Response(body).body;
    try {
      const chunks = new DefaultChatTransport().processResponseStream(bytes);
      let message;
      for await (const snapshot of readUIMessageStream({ stream: chunks, terminateOnError: true })) {
        message = snapshot;
      }
      found.push({ message: structuredClone(message) });
    } catch (error) {
      found.push({ error: String(error.message ?? error) });
    }
  }
  return found;
}

for await (const line of createInterface({ input: process.stdin })) {
  const command = JSON.parse(line);
  if (command.validate) {
    say({ done: await validate(command.validate) });
    continue;
  }
  ({ api, token, chatId } = command);
  messages = [];
  say({ done: await chat(command.steps) });
}
