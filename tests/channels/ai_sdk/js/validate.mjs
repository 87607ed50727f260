// Each SSE body of argv[2] (a JSON list) read as the chat transport reads a response: its
// chunks validated by the ai package's schema, its message built by readUIMessageStream.
import { DefaultChatTransport, readUIMessageStream } from 'ai';

const bodies = JSON.parse(process.argv[2]);
const results = [];
for (const body of bodies) {
  const bytes = new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(body));
      controller.close();
    },
  });
  try {
    const chunks = new DefaultChatTransport().processResponseStream(bytes);
    let message;
    for await (const snapshot of readUIMessageStream({ stream: chunks, terminateOnError: true })) {
      message = snapshot;
    }
    results.push({ message: structuredClone(message) });
  } catch (error) {
    results.push({ error: String(error.message ?? error) });
  }
}
process.stdout.write(JSON.stringify(results));
