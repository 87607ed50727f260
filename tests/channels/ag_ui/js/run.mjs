// Drives an eve ag_ui channel with @ag-ui/client's HttpAgent, as a CopilotKit app would.
// argv[2] is a JSON scenario: {url, token, threadId, messages, runs: [{message, resume,
// answer, values, abandon, abortOn, cancelOn, touch}]} (answer: resume every pending interrupt
// with that option, and a form's values when given; abandon: cancel them; touch: a file written before the run); the runs go one after another on one agent, whose client-side
// verifier checks each run's event order. Prints {runs: [{events, error,
// pendingInterrupts}], messages, state} as JSON.
import { writeFileSync } from "node:fs";
import { HttpAgent } from "@ag-ui/client";

const scenario = JSON.parse(process.argv[2]);
const headers = scenario.token ? { Authorization: `Bearer ${scenario.token}` } : {};
const agent = new HttpAgent({
  url: scenario.url,
  headers,
  threadId: scenario.threadId,
  initialMessages: scenario.messages ?? [],
});

async function cancel() {
  const response = await fetch(`${scenario.url}/cancel`, {
    method: "POST",
    headers: { ...headers, "Content-Type": "application/json" },
    body: JSON.stringify({ threadId: scenario.threadId }),
  });
  return response.json();
}

function resumeOf(step) {
  if (step.answer) {
    return agent.pendingInterrupts.map((interrupt) => ({
      interruptId: interrupt.id,
      status: "resolved",
      payload: step.values ? { optionId: step.answer, values: step.values } : { optionId: step.answer },
    }));
  }
  if (step.abandon) {
    return agent.pendingInterrupts.map((interrupt) => ({
      interruptId: interrupt.id,
      status: "cancelled",
    }));
  }
  return step.resume;
}

const runs = [];
for (const step of scenario.runs) {
  const run = { events: [], error: null, cancelAnswer: null };
  if (step.touch) writeFileSync(step.touch, "yes");
  if (step.message) agent.addMessage({ role: "user", ...step.message });
  const subscriber = {
    onEvent: async ({ event }) => {
      run.events.push(event);
      // aborted outside the subscriber: an abort from inside it can leave the run unsettled
      if (event.type === step.abortOn) setImmediate(() => agent.abortRun());
      if (event.type === step.cancelOn) run.cancelAnswer = await cancel();
    },
  };
  try {
    await agent.runAgent(resumeOf(step) ? { resume: resumeOf(step) } : {}, subscriber);
  } catch (error) {
    run.error = String(error?.message ?? error);
  }
  run.pendingInterrupts = agent.pendingInterrupts;
  runs.push(run);
}
process.stdout.write(JSON.stringify({ runs, messages: agent.messages, state: agent.state }));
